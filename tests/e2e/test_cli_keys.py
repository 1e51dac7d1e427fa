"""``registry keys`` on the embedded PostgreSQL: before the first ``registry serve`` (the command starts and
migrates it) and while one runs on the data directory (the command joins the server's PostgreSQL, whose address
``pgdata/postmaster.pid`` holds); every expected failure is one line, never a traceback.

Runs the installed ``registry`` console script, as an operator does, with no REGISTRY_* variables but those named.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_quickstart import STARTUP_SECONDS, WEATHER_AGENT, registry_script
from tests.support.servers import REPO_ROOT, free_port

COMMAND_SECONDS = 120


def operator_env(**variables: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("REGISTRY_")}
    # As on an operator's desktop: without it, the embedded PostgreSQL's package warns where it keeps its sockets.
    env.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return {**env, **variables}


def keys(data_dir: Path, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [registry_script(), "keys", *arguments, "--data-dir", str(data_dir)],
        env=operator_env(**variables),
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
    )


def created_secret(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    secret: str = json.loads(result.stdout)["secret"]
    return secret


@contextlib.contextmanager
def serving(data_dir: Path, log: Path) -> Iterator[str]:
    """``registry serve --data-dir DIR`` with writes needing a key; stopped with SIGTERM."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with log.open("ab") as output:
        process = subprocess.Popen(
            [registry_script(), "serve", "--data-dir", str(data_dir), "--port", str(port)],
            env=operator_env(REGISTRY_AUTH="writes"),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"registry serve exited with {process.returncode}:\n{log.read_text(errors='replace')}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"registry serve did not get ready in {STARTUP_SECONDS} s")
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(60)


def put(base: str, secret: str, thing_id: str) -> httpx.Response:
    document = {**WEATHER_AGENT, "id": thing_id}
    return httpx.put(
        f"{base}/things/{thing_id}",
        content=json.dumps(document),
        headers={"Content-Type": "application/td+json", "Authorization": f"Bearer {secret}"},
        timeout=30,
    )


def test_key_commands_work_before_the_first_serve_and_while_it_runs(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # A fresh data directory: the command starts the embedded PostgreSQL, migrates it and stops it again.
    first = created_secret(keys(data_dir, "create", "--name", "before", "--scopes", "write", "--json"))
    listed = keys(data_dir, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [key["name"] for key in json.loads(listed.stdout)] == ["before"]

    with serving(data_dir, tmp_path / "serve.log") as base:
        assert put(base, first, "urn:test:cli-keys:before").status_code == 201
        # While the directory runs: the command reaches its PostgreSQL, and the new key works at once.
        second = created_secret(keys(data_dir, "create", "--name", "during", "--scopes", "write", "--json"))
        assert put(base, second, "urn:test:cli-keys:during").status_code == 201
        listed = keys(data_dir, "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [key["name"] for key in json.loads(listed.stdout)] == ["before", "during"]
        revoked = keys(data_dir, "revoke", "during")
        assert revoked.returncode == 0, revoked.stderr
        refused = put(base, second, "urn:test:cli-keys:after-revoke")
        assert refused.status_code == 401
        assert "revoked" in refused.json()["detail"]
        # Commands that need the data directory to themselves say so in one line.
        migrate = subprocess.run(
            [registry_script(), "migrate", "--data-dir", str(data_dir)],
            env=operator_env(),
            capture_output=True,
            text=True,
            timeout=COMMAND_SECONDS,
        )
        assert migrate.returncode == 1
        assert "Traceback" not in migrate.stderr
        assert "is in use by another registry serve" in migrate.stderr
        # The directory still serves: the commands left its PostgreSQL running.
        assert httpx.get(f"{base}/readyz", timeout=10).status_code == 200
    # And after it: the command starts the embedded PostgreSQL again by itself.
    listed = keys(data_dir, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {key["name"]: key["state"] for key in json.loads(listed.stdout)} == {
        "before": "active",
        "during": "revoked",
    }


@pytest.mark.parametrize(
    ("arguments", "variables", "says"),
    [
        (("list",), {"REGISTRY_DATABASE_URL": "postgresql://postgres@127.0.0.1:1/nowhere"}, "the directory's database"),
        (("create", "--name", "x", "--scopes", "root"), {}, "scopes must be among read, write, admin"),
        (("create", "--name", "x", "--expires", "soonish"), {}, "expected a duration such as 30d"),
        (("revoke", "nobody"), {}, "no key with id or name 'nobody'"),
    ],
)
def test_expected_failures_of_key_commands_are_one_line(
    tmp_path: Path, arguments: tuple[str, ...], variables: dict[str, str], says: str
) -> None:
    result = keys(tmp_path / "data", *arguments, **variables)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert says in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.strip()]) <= 3, result.stderr


def test_a_database_without_the_schema_is_named_when_migrating_is_off(tmp_path: Path, own_database_url: str) -> None:
    """REGISTRY_MIGRATE_ON_START=false: the command does not migrate, and says what to run."""
    from tests.support.servers import admin_execute

    admin_execute(own_database_url, "DROP TABLE api_keys; DROP TABLE alembic_version")
    result = keys(tmp_path / "data", "list", REGISTRY_DATABASE_URL=own_database_url, REGISTRY_MIGRATE_ON_START="false")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "without the registry's schema" in result.stderr
    assert "registry migrate" in result.stderr
