"""The SDK against real servers: sync client, event resumption, AgentRegistration retries, feed recovery."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from registry.client import (
    AgentRegistration,
    AsyncRegistryClient,
    NotFoundError,
    RegistryClient,
    SyncAgentRegistration,
)
from registry.store.database import driver_url
from tests.support.servers import ServerProcess, free_port
from tests.support.things import collecting, thing


def test_sync_client_resumes_events_from_an_id(base_url: str) -> None:
    with RegistryClient(base_url) as client:
        first = thing("Sync 1")
        client.register(first)
        second = thing("Sync 2")
        client.register(second)
        client.patch(second["id"], {"title": "Sync 2b"})
        # Find the sequence of the first registration, then replay everything after it.
        replayed = client.events(diff=True, last_event_id=0)
        for event in replayed:
            if event.thing_id == first["id"]:
                break
        assert next(replayed).thing_id == second["id"]
        update = next(replayed)
        assert update.data == {"id": second["id"], "title": "Sync 2b"}
        replayed.close()
        assert client.get(second["id"])["title"] == "Sync 2b"


async def test_agent_registration_retries_until_the_directory_is_up(database_url: str) -> None:
    port = free_port()
    document = thing("Patient agent")
    async with AsyncRegistryClient(f"http://127.0.0.1:{port}") as client:
        registration = AgentRegistration(client, document, ttl=5, handle_signals=False)
        async with registration:
            await asyncio.sleep(1.0)  # nothing listens yet: the registration keeps retrying
            assert not registration.registered.is_set()
            server = await asyncio.to_thread(ServerProcess(database_url, port=port).start)
            try:
                await asyncio.wait_for(registration.registered.wait(), 15)
                assert (await client.get(document["id"]))["title"] == "Patient agent"
            finally:
                await registration.stop()
                with pytest.raises(NotFoundError):
                    await client.get(document["id"])
                await asyncio.to_thread(server.stop)


async def test_feed_catches_up_after_losing_its_listen_connection(start_server: Any) -> None:
    server = start_server({"REGISTRY_FEED_POLL_INTERVAL": "300"})  # so only the catch-up can deliver
    document = thing("Written while deaf")
    async with (
        collecting(server.base_url, about=[document["id"]]) as stream,
        AsyncRegistryClient(server.base_url) as sdk,
    ):
        admin = await asyncpg.connect(driver_url(server.database_url))
        try:
            killed = await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = 'lmos-registry-listen' AND datname = current_database()"
            )
        finally:
            await admin.close()
        assert killed >= 1
        await sdk.register(document)
        event = await stream.next(within=10)
    assert event.thing_id == document["id"]


def test_sync_agent_registration(base_url: str) -> None:
    document = thing("Blocking agent")
    with RegistryClient(base_url) as client:
        with SyncAgentRegistration(base_url, document, ttl=5, handle_signals=False) as registration:
            assert registration.wait_registered(10)
            assert registration.thing_id == document["id"]
            assert client.get(document["id"])["registration"]["ttl"] == 5
        with pytest.raises(NotFoundError):
            client.get(document["id"])
