"""What the one on call reads (the dashboard's sources), over HTTP against the application in process: true counts
behind a capped page, who changed what in one description, a lapsed lease told apart from a delete, the last lease
renewal, and request metrics that leave out a watching page's own health polls."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import events_replayed, local_client
from tests.support.keys import add_key
from tests.support.things import thing, versioned_tool

MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


@contextlib.asynccontextmanager
async def directory(database_url: str, **settings: Any) -> AsyncIterator[AsyncTestClient[Any]]:
    app = create_app(Settings(database_url=database_url, db_pool_size=3, **settings))
    async with local_client(app) as client:
        yield client


async def test_quality_counts_every_entry_beyond_the_page(own_database_url: str) -> None:
    async with directory(own_database_url) as client:
        for number in range(5):
            tool_id = f"urn:test:linted:{number}"
            assert (
                await client.put(f"/things/{tool_id}", json=versioned_tool(tool_id, "1.0.0", []))
            ).status_code == 201
            # A new required input under a patch bump: breaking and dishonest.
            patched = versioned_tool(tool_id, "1.0.1", ["q"])
            assert (await client.put(f"/things/{tool_id}", json=patched)).status_code == 204
        capped = (await client.get("/api/v1/quality", params={"limit": 2})).json()
        assert (len(capped["lint"]), capped["lint_total"]) == (2, 5)
        assert (len(capped["bumps"]), capped["bumps_total"]) == (2, 5)
        whole = (await client.get("/api/v1/quality", params={"limit": 100})).json()
        assert (len(whole["lint"]), whole["lint_total"], whole["bumps_total"]) == (5, 5, 5)


async def test_the_changes_of_one_description_say_who_changed_what(own_database_url: str) -> None:
    secrets = {name: await add_key(own_database_url, name, ["read", "write"], owner="team") for name in ("ann", "bob")}
    forms = [{"href": "https://agents.example/sensor"}]
    document = thing("Audited", properties={"temperature": {"type": "number", "forms": forms}})
    other = thing("Unrelated")

    def as_(name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {secrets[name]}"}

    async with directory(own_database_url, auth="writes") as client:
        assert (await client.put(f"/things/{document['id']}", json=document, headers=as_("ann"))).status_code == 201
        assert (await client.put(f"/things/{other['id']}", json=other, headers=as_("ann"))).status_code == 201
        patch = {
            "title": "Audited again",
            "properties": {"temperature": {"unit": "C"}, "humidity": {"type": "number", "forms": forms}},
        }
        patched = await client.patch(
            f"/things/{document['id']}", content=json.dumps(patch), headers={**MERGE_PATCH, **as_("bob")}
        )
        assert patched.status_code == 204, patched.text
        changes = (await client.get("/api/v1/changes", params={"id": document["id"]})).json()["items"]
    assert [(item["type"], item["actor"], item["changed"]) for item in changes] == [
        ("thing_updated", "key:bob", ["/properties/humidity", "/properties/temperature", "/title"]),
        ("thing_created", "key:ann", None),
    ]
    assert {item["id"] for item in changes} == {document["id"]}


async def test_a_lapsed_lease_is_told_apart_from_a_delete(own_database_url: str) -> None:
    lapsing, deleted = thing("Lapsing"), thing("Deleted")
    app = create_app(Settings(database_url=own_database_url, db_pool_size=3, purge_interval=0.2))
    async with local_client(app) as client:
        put = await client.put(f"/things/{lapsing['id']}", json={**lapsing, "registration": {"ttl": 1}})
        assert put.status_code == 201
        assert (await client.put(f"/things/{deleted['id']}", json=deleted)).status_code == 201
        assert (await client.delete(f"/things/{deleted['id']}")).status_code == 204
        deadline = time.monotonic() + 15
        while True:
            items = (await client.get("/api/v1/changes", params={"limit": 10})).json()["items"]
            gone = {item["id"]: item["reason"] for item in items if item["type"] == "thing_deleted"}
            if lapsing["id"] in gone:
                break
            assert time.monotonic() < deadline, "the purge did not remove the lapsed registration"
            await asyncio.sleep(0.2)
        assert gone == {lapsing["id"]: "expired", deleted["id"]: None}
        # The event stream says so too (replayed from the change log).
        replay = client.blocking_portal.start_task_soon(events_replayed, app, "/events/thing_deleted", 2)
        status, events = await asyncio.wrap_future(replay)
    assert status == 200
    data = [json.loads(event.split(b"data: ", 1)[1]) for event in events]
    assert {item["id"]: item.get("reason") for item in data} == {lapsing["id"]: "expired", deleted["id"]: None}


async def test_the_last_lease_renewal_is_read_by_whoever_may_read_the_description(own_database_url: str) -> None:
    secrets = {
        "acme": await add_key(own_database_url, "acme", ["read", "write"], tenant="acme"),
        "other": await add_key(own_database_url, "other", ["read"], tenant="other"),
    }
    leased, unleased = thing("Leased"), thing("Unleased")
    acme = {"Authorization": f"Bearer {secrets['acme']}"}
    async with directory(own_database_url, auth="all") as client:
        put = await client.put(f"/things/{leased['id']}", json={**leased, "registration": {"ttl": 600}}, headers=acme)
        assert put.status_code == 201
        assert (await client.put(f"/things/{unleased['id']}", json=unleased, headers=acme)).status_code == 201
        before = (await client.get(f"/api/v1/things/{leased['id']}/lease", headers=acme)).json()
        assert before["ttl"] == 600
        await asyncio.sleep(1.1)
        renewed = (await client.post(f"/api/v1/things/{leased['id']}/lease", headers=acme)).json()
        after = (await client.get(f"/api/v1/things/{leased['id']}/lease", headers=acme)).json()
        assert after["lastSeen"] == renewed["lastSeen"] > before["lastSeen"]
        assert after["expires"] == renewed["expires"]
        plain = (await client.get(f"/api/v1/things/{unleased['id']}/lease", headers=acme)).json()
        assert (plain["ttl"], plain["expires"]) == (None, None)
        # Another tenant's reader gets what a missing id gets.
        hidden = await client.get(
            f"/api/v1/things/{leased['id']}/lease", headers={"Authorization": f"Bearer {secrets['other']}"}
        )
        missing = await client.get("/api/v1/things/urn:test:absent/lease", headers=acme)
        assert hidden.status_code == missing.status_code == 404


def requests_of(metrics: str, path: str) -> float:
    pattern = re.compile(rf'^registry_http_requests_total\{{[^}}]*path="{re.escape(path)}"[^}}]*\}} (\S+)$', re.M)
    return sum(float(value) for value in pattern.findall(metrics))


def polls_of(metrics: str, path: str) -> float:
    pattern = re.compile(rf'^registry_http_polls_total\{{path="{re.escape(path)}"[^}}]*\}} (\S+)$', re.M)
    return sum(float(value) for value in pattern.findall(metrics))


async def test_a_watching_pages_health_polls_are_not_counted_as_traffic(own_database_url: str) -> None:
    async with directory(own_database_url) as client:
        before = (await client.get("/metrics")).text
        # Ready or not (the SPARQL index may still be catching up): each answer is counted, in one place only.
        for _ in range(3):
            await client.get("/readyz", headers={"Registry-Poll": "dashboard"})
        await client.get("/readyz")
        # The mark is honoured on the probes only: any other request carrying it is counted as ever.
        assert (await client.get("/things", headers={"Registry-Poll": "dashboard"})).status_code == 200
        after = (await client.get("/metrics")).text
    assert requests_of(after, "/readyz") - requests_of(before, "/readyz") == 1
    assert polls_of(after, "/readyz") - polls_of(before, "/readyz") == 3
    assert requests_of(after, "/things") - requests_of(before, "/things") == 1
