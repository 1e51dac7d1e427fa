"""Lease renewals leave no change-log entry; the renewal statement NOTIFYs the renewed ids instead, in payloads
PostgreSQL accepts (under 8,000 bytes), for the response caches of every server process."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import msgspec
import pytest

from registry.store.database import Database
from registry.store.leases import RENEWALS_CHANNEL
from tests.integration.conftest import directory_service
from tests.support.things import thing


def _named(payloads: list[str]) -> list[set[str]]:
    return [set(msgspec.json.decode(payload)) for payload in payloads if payload != "*"]


async def _until(condition: Callable[[], bool], what: str) -> None:
    """Other tests share the database: their renewals may be notified here too, so wait for ours."""
    deadline = asyncio.get_running_loop().time() + 10
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.01)


async def test_renewed_ids_are_notified_in_parts_under_the_payload_limit(database: Database) -> None:
    directory = directory_service(database)
    documents = [thing(f"Leased {number}", registration={"ttl": 60}) for number in range(300)]
    for document in documents:
        await directory.put(document["id"], document)
    payloads: list[str] = []
    listening = await database.listen({RENEWALS_CHANNEL: payloads.append})
    try:
        await asyncio.gather(*(directory.leases.renew(document["id"]) for document in documents))
        expected = {document["id"] for document in documents}  # ~15 KB of JSON: more than one payload
        await _until(lambda: expected <= set().union(*_named(payloads)), "renewed ids were not notified")
        assert len([ids for ids in _named(payloads) if ids & expected]) >= 2
        assert all(len(payload.encode()) < 8000 for payload in payloads)
    finally:
        await listening.close()


async def test_an_id_too_long_to_notify_is_announced_as_unnamed(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = directory_service(database)
    # 2,000 control characters: 12,000 bytes of JSON, more than a notification holds. Only an id stored before ids
    # were checked can hold them (registry/descriptions/ids.py): written here as it was then.
    document = thing("Unnameable", registration={"ttl": 60})
    document["id"] = "urn:test:" + "\x01" * 2000
    with monkeypatch.context() as unchecked:
        unchecked.setattr("registry.errors.id_problem", lambda value: None)
        await directory.put(document["id"], document)
    payloads: list[str] = []
    listening = await database.listen({RENEWALS_CHANNEL: payloads.append})
    try:
        lease = await directory.leases.renew(document["id"])
        assert lease.id == document["id"]
        await _until(lambda: "*" in payloads, "no unnamed renewal was notified")
    finally:
        await listening.close()
