"""The SPARQL worker's threads are shared round-robin between clients, each held below the whole."""

from __future__ import annotations

import asyncio

import pytest

from registry.errors import ServiceUnavailable
from registry.sparql.worker.fairness import FairSlots, client_share


def test_one_client_may_run_fewer_queries_than_the_worker_runs() -> None:
    assert [client_share(slots) for slots in (1, 2, 3, 8)] == [1, 1, 2, 7]


async def test_a_client_holding_its_share_leaves_a_slot_to_another_client() -> None:
    slots = FairSlots(2, queue=10)
    release = asyncio.Event()
    started: list[str] = []

    async def run(client: str) -> None:
        async with slots.slot(client, wait=5):
            started.append(client)
            await release.wait()

    hogs = [asyncio.create_task(run("hog")) for _ in range(5)]
    await asyncio.sleep(0.01)
    assert started == ["hog"]  # one of five: its share of two slots
    other = asyncio.create_task(run("other"))
    await asyncio.sleep(0.01)
    assert started == ["hog", "other"]  # at once, though the hog has four waiting before it
    release.set()
    await asyncio.gather(*hogs, other)
    assert started.count("hog") == 5


async def test_freed_slots_go_to_the_waiting_clients_in_turn() -> None:
    slots = FairSlots(3, queue=20)  # a share of two
    order: list[str] = []
    gate = asyncio.Event()

    async def run(client: str) -> None:
        async with slots.slot(client, wait=5):
            await gate.wait()
            order.append(client)

    blockers = [asyncio.create_task(run("first")) for _ in range(2)] + [asyncio.create_task(run("second"))]
    await asyncio.sleep(0.01)
    waiting = [asyncio.create_task(run(client)) for client in ["many"] * 4 + ["one"]]
    await asyncio.sleep(0.01)
    assert slots.running == 3
    assert slots.waiting == 5
    gate.set()
    await asyncio.gather(*blockers, *waiting)
    # "one" came last but is served in the first turn after the blockers, not after the four of "many".
    assert order.index("one") < len(order) - 1


async def test_a_query_that_waits_too_long_or_finds_the_queue_full_is_told_to_retry() -> None:
    slots = FairSlots(1, queue=1)
    gate = asyncio.Event()

    async def hold() -> None:
        async with slots.slot("a", wait=5):
            await gate.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0.01)
    with pytest.raises(ServiceUnavailable) as waited:
        async with slots.slot("b", wait=0.05):
            pass
    assert waited.value.headers["Retry-After"]
    assert slots.waiting == 0  # it left the queue
    queued = asyncio.create_task(hold())
    await asyncio.sleep(0.01)
    with pytest.raises(ServiceUnavailable) as full:
        async with slots.slot("c", wait=5):
            pass
    assert "REGISTRY_SPARQL_QUEUE" in full.value.detail
    gate.set()
    await asyncio.gather(holder, queued)
    assert slots.running == slots.waiting == 0


async def test_a_cancelled_waiter_gives_up_its_place() -> None:
    slots = FairSlots(1, queue=5)
    gate = asyncio.Event()

    async def hold(client: str) -> None:
        async with slots.slot(client, wait=5):
            await gate.wait()

    holder = asyncio.create_task(hold("a"))
    await asyncio.sleep(0.01)
    waiter = asyncio.create_task(hold("b"))
    await asyncio.sleep(0.01)
    waiter.cancel()
    await asyncio.sleep(0.01)
    assert slots.waiting == 0
    gate.set()
    await holder
    assert slots.running == 0
