"""Several replicas on one database, leases and expiry."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from registry.client import AsyncRegistryClient, ConflictError, NotFoundError
from tests.support.things import collecting, thing


async def test_events_reach_subscribers_of_another_replica(start_server: Any) -> None:
    writer, reader = start_server(), start_server()
    document = thing("Across replicas")
    async with (
        collecting(reader.base_url, about=[document["id"]], diff=True) as stream,
        AsyncRegistryClient(writer.base_url) as sdk,
    ):
        await sdk.register(document)
        await sdk.patch(document["id"], {"title": "Across replicas, patched"})
        created, updated = await stream.take(2)
    assert created.type == "thing_created"
    assert created.data["title"] == "Across replicas"
    assert updated.data == {"id": document["id"], "title": "Across replicas, patched"}


async def test_expiry_with_two_replicas_emits_one_delete(own_database_url: str, start_server: Any) -> None:
    # own_database_url first: it is set up before the servers and dropped after they stop.
    env = {"REGISTRY_PURGE_INTERVAL": "0.2"}
    first, second = start_server(env, database=own_database_url), start_server(env, database=own_database_url)
    documents = [thing(f"Short-lived {index}") for index in range(5)]
    ids = [document["id"] for document in documents]
    async with (
        collecting(first.base_url, about=ids, event_type="thing_deleted") as on_first,
        collecting(second.base_url, about=ids, event_type="thing_deleted") as on_second,
        AsyncRegistryClient(first.base_url) as sdk,
    ):
        for document in documents:
            await sdk.register(document, ttl=1)
        expected = sorted(document["id"] for document in documents)
        for stream in (on_first, on_second):
            deleted = await stream.take(5, within=10)
            assert sorted(event.thing_id for event in deleted) == expected
            assert len({event.seq for event in deleted}) == 5
            assert await stream.nothing_within(1.0), "a second delete event for the same expiry"


async def test_lease_renewal_extends_expiry_without_an_event(base_url: str) -> None:
    document = thing("Leased")
    async with AsyncRegistryClient(base_url) as sdk, collecting(base_url, about=[document["id"]]) as stream:
        await sdk.register(document, ttl=2)
        before = (await sdk.get(document["id"]))["registration"]
        assert (await stream.next()).type == "thing_created"
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline:  # past the ttl, alive only thanks to renewals
            lease = await sdk.renew_lease(document["id"])
            await asyncio.sleep(0.5)
        assert lease.ttl == 2
        assert lease.id == document["id"]
        after = await sdk.get(document["id"])
        assert after["registration"]["expires"] > before["expires"]
        assert after["registration"]["modified"] == before["modified"]
        assert await stream.nothing_within(0.3), "a renewal is not an update"
        await asyncio.sleep(2.2)
        with pytest.raises(NotFoundError):
            await sdk.get(document["id"])
        with pytest.raises(NotFoundError, match="expired"):
            await sdk.renew_lease(document["id"])


async def test_lease_errors(base_url: str) -> None:
    document = thing("No ttl")
    async with AsyncRegistryClient(base_url) as sdk:
        await sdk.register(document)
        with pytest.raises(ConflictError) as conflict:
            await sdk.renew_lease(document["id"])
        assert "no ttl" in conflict.value.detail
        with pytest.raises(NotFoundError) as missing:
            await sdk.renew_lease("urn:test:never-registered")
        assert missing.value.status == 404
        assert missing.value.problem["status"] == 404


def test_lease_needs_the_lease_suffix(client: httpx.Client) -> None:
    response = client.post("/api/v1/things/urn:test:x/leases")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
