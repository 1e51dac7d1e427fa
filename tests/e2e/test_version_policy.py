"""Version policy at write time, against a real server: the registrant hears about a dishonest bump, a downgrade
and changed content under a kept version (HTTP header, SDK result, CLI output); ``enforce`` refuses them with 409."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from registry.client import ProblemError, RegistryClient
from tests.support.servers import ServerProcess
from tests.support.things import thing

ROOT = Path(__file__).resolve().parents[2]


def agent(thing_id: str, version: str, actions: tuple[str, ...] = ("lookup", "pay")) -> dict[str, Any]:
    document = thing(
        "Billing",
        **{
            "@type": "lmos:Agent",
            "version": {"instance": version},
            "actions": {
                name: {"description": name, "forms": [{"href": f"https://billing.example/{name}"}]} for name in actions
            },
        },
    )
    document["id"] = thing_id
    return document


def put(client: httpx.Client, document: dict[str, Any]) -> httpx.Response:
    return client.put(f"/things/{document['id']}", json=document, headers={"content-type": "application/td+json"})


def notices(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code in (201, 204), response.text
    header = response.headers.get("registry-notices")
    return [notice for notice in json.loads(header or "[]") if notice["code"].startswith("version-")]


def test_warn_reports_dishonest_bump_downgrade_and_changed_content(client: httpx.Client) -> None:
    thing_id = f"urn:test:policy:{uuid.uuid4()}"
    assert notices(put(client, agent(thing_id, "3.0.0"))) == []
    assert notices(put(client, agent(thing_id, "3.0.0"))) == []  # the same registration again: nothing to say

    [dishonest] = notices(put(client, agent(thing_id, "3.1.0", ("lookup",))))
    assert dishonest["code"] == "version-bump-too-small"
    assert dishonest["field"] == "version.instance"
    assert "3.0.0 → 3.1.0 is a minor bump, but the changes need a major bump" in dishonest["message"]
    assert "action_removed at /actions/pay" in dishonest["message"]

    [downgrade] = notices(put(client, agent(thing_id, "2.2.0")))
    assert downgrade["code"] == "version-downgrade"
    assert "2.2.0 is lower than 3.1.0" in downgrade["message"]

    [changed] = notices(put(client, agent(thing_id, "2.2.0", ("lookup",))))
    assert changed["code"] == "version-content-changed"
    assert "version 2.2.0 is already registered with other content (breaking" in changed["message"]

    versions = client.get(f"/api/v1/things/{thing_id}/versions").json()["items"]
    kept = {item["version"]: item for item in versions}
    assert (kept["2.2.0"]["current"], kept["2.2.0"]["content_changed"]) == (False, True)
    detail = client.get(f"/api/v1/things/{thing_id}/versions/2.2.0").json()
    assert sorted(detail["document"]["actions"]) == ["lookup", "pay"]  # the first registration of 2.2.0 is kept
    assert (detail["current"], detail["content_changed"]) == (False, True)
    assert sorted(client.get(f"/things/{thing_id}").json()["actions"]) == ["lookup"]


def test_each_description_of_a_batch_is_compared_with_its_own_kept_versions(client: httpx.Client) -> None:
    """The kept versions a batch compares with are read at once for all of it: each write still hears about its
    own (and a new id, with none kept, about nothing)."""
    dishonest, changed, new = (f"urn:test:policy:batch:{uuid.uuid4()}" for _ in range(3))
    assert notices(put(client, agent(dishonest, "3.0.0"))) == []
    assert notices(put(client, agent(changed, "1.0.0"))) == []

    answer = client.post(
        "/api/v1/things/batch",
        json=[agent(dishonest, "3.1.0", ("lookup",)), agent(new, "1.0.0"), agent(changed, "1.0.0", ("pay",))],
    )

    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [item["status"] for item in results] == [200, 201, 200]
    policy = [
        [notice for notice in item.get("notices", []) if notice["code"].startswith("version-")] for item in results
    ]
    assert [[notice["code"] for notice in each] for each in policy] == [
        ["version-bump-too-small"],
        [],
        ["version-content-changed"],
    ]
    assert "3.0.0 → 3.1.0 is a minor bump" in policy[0][0]["message"]


def test_sdk_and_cli_show_version_notices(base_url: str, tmp_path: Path) -> None:
    thing_id = f"urn:test:policy:{uuid.uuid4()}"
    with RegistryClient(base_url) as sdk:
        assert [
            notice for notice in sdk.register(agent(thing_id, "1.0.0")).notices if notice.code.startswith("version")
        ] == []
        result = sdk.register(agent(thing_id, "1.0.1", ("lookup",)))
    [notice] = [notice for notice in result.notices if notice.code.startswith("version-")]
    assert (notice.code, notice.field) == ("version-bump-too-small", "version.instance")
    assert "1.0.0 → 1.0.1" in notice.message

    path = tmp_path / "agent.json"
    path.write_text(json.dumps(agent(thing_id, "0.9.0", ("lookup",))))
    command = [sys.executable, "-m", "registry", "register", str(path), "--url", base_url]
    shown = subprocess.run(
        command, cwd=ROOT, env={**os.environ, "COLUMNS": "250"}, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert "notice version-downgrade: version 0.9.0 is lower than 1.0.1" in shown.stdout


def test_enforce_refuses_with_409_and_the_changes(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server({"REGISTRY_VERSION_POLICY": "enforce"})
    thing_id = f"urn:test:policy:{uuid.uuid4()}"
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        assert put(client, agent(thing_id, "2.0.0")).status_code == 201
        assert put(client, agent(thing_id, "2.0.0")).status_code == 204
        assert put(client, agent(thing_id, "2.1.0", ("lookup", "pay", "refund"))).status_code == 204

        for document, code in [
            (agent(thing_id, "2.2.0", ("lookup",)), "version-bump-too-small"),
            (agent(thing_id, "1.9.0"), "version-downgrade"),
            (agent(thing_id, "2.0.0", ("lookup",)), "version-content-changed"),
        ]:
            response = put(client, document)
            assert response.status_code == 409, response.text
            assert response.headers["content-type"].startswith("application/problem+json")
            problem = response.json()
            assert problem["code"] == code
            assert "REGISTRY_VERSION_POLICY=enforce" in problem["detail"]
            if code != "version-downgrade":
                assert {"kind": "action_removed", "pointer": "/actions/pay", "document": "old"}.items() <= (
                    next(change for change in problem["changes"] if change["pointer"] == "/actions/pay").items()
                )
        assert client.get(f"/things/{thing_id}").json()["version"] == {"instance": "2.1.0"}

        with RegistryClient(server.base_url) as sdk, pytest.raises(ProblemError) as refused:
            sdk.register(agent(thing_id, "2.1.1", ("lookup",)))
        assert refused.value.status == 409
