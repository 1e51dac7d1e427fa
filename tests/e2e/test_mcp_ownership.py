"""Publishing to the MCP Registry API obeys the directory's ownership rules: the namespace of a server's name is
its vendor, so a publisher bound to vendors publishes only in its own namespaces, and only a server's owner
publishes its next versions or changes their status. Reads stay anonymous."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.test_auth import create_key
from tests.support.servers import ServerProcess, fresh_database


@pytest.fixture(scope="module")
def publishers(postgres_admin_url: str) -> Iterator[tuple[str, dict[str, dict[str, str]]]]:
    with fresh_database(postgres_admin_url) as url:
        keys = {
            "acme": create_key(url, "acme-ci", "--scopes", "write", "--vendor", "io.github.acme"),
            "other": create_key(url, "other", "--scopes", "write"),
        }
        headers = {who: {"Authorization": f"Bearer {key}"} for who, key in keys.items()}
        env = {"REGISTRY_AUTH": "writes", "REGISTRY_PURGE_INTERVAL": "86400"}
        with ServerProcess(url, env) as server:
            yield server.base_url, headers


def entry(name: str, version: str) -> dict[str, str]:
    return {"name": name, "description": "Ownership test server", "version": version}


def test_publishers_publish_only_in_their_namespace_and_only_owners_follow_up(
    publishers: tuple[str, dict[str, dict[str, str]]],
) -> None:
    base_url, headers = publishers
    with httpx.Client(base_url=base_url, timeout=30) as client:
        anonymous = client.post("/v0.1/publish", json=entry("io.github.acme/tool", "1.0.0"))
        assert anonymous.status_code == 401
        assert anonymous.json()["error"]
        assert client.post("/v0.1/publish", json=entry("io.github.acme/tool", "1.0.0"), headers=headers["acme"]).json()
        impostor = client.post("/v0.1/publish", json=entry("io.github.evil/tool", "1.0.0"), headers=headers["acme"])
        assert impostor.status_code == 403
        assert impostor.headers["content-type"].startswith("application/json")
        assert (impostor.json()["rule"], "io.github.evil" in impostor.json()["error"]) == ("vendor", True)
        takeover = client.post("/v0.1/publish", json=entry("io.github.acme/tool", "1.1.0"), headers=headers["other"])
        assert (takeover.status_code, takeover.json()["rule"]) == (403, "owner")
        status = client.patch(
            "/v0.1/servers/io.github.acme%2Ftool/status", json={"status": "deprecated"}, headers=headers["other"]
        )
        assert status.status_code == 403
        next_version = client.post("/v0.1/publish", json=entry("io.github.acme/tool", "1.1.0"), headers=headers["acme"])
        assert next_version.status_code == 200
        listed = client.get("/v0.1/servers", params={"search": "io.github.acme/"}).json()["servers"]
        assert [item["server"]["version"] for item in listed] == ["1.0.0", "1.1.0"]
