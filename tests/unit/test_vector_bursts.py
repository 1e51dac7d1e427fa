"""The vector backfill waits for a burst of writes to pause (or for a bound) before a round, and no longer."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest

from registry.embeddings import indexer
from registry.embeddings.indexer import VectorIndexer


@pytest.fixture
def job(monkeypatch: pytest.MonkeyPatch) -> VectorIndexer:
    monkeypatch.setattr(indexer, "WRITES_PAUSE", WRITES_PAUSE)
    monkeypatch.setattr(indexer, "BURST_WAIT", BURST_WAIT)
    database: Any = None  # never reached: only the waiting is exercised
    return VectorIndexer(database, None)


WRITES_PAUSE = 0.1
BURST_WAIT = 0.6


async def _waited(job: VectorIndexer, nudge_every: float | None) -> tuple[float, float]:
    """Seconds the job waited for writes nudging it every ``nudge_every`` seconds (None: no writes) to pause, and
    the longest gap between two nudges meanwhile (a loaded machine may leave the writer unscheduled for longer than
    it asked)."""
    nudged: list[float] = []

    async def writes() -> None:
        while nudge_every is not None:
            job.nudge()
            nudged.append(time.monotonic())
            await asyncio.sleep(nudge_every)

    writer = asyncio.create_task(writes())
    started = time.monotonic()
    await job._until_writes_pause()
    ended = time.monotonic()
    writer.cancel()
    marks = [started, *(mark for mark in nudged if mark < ended), ended]
    return ended - started, max(later - earlier for earlier, later in itertools.pairwise(marks))


async def test_a_round_waits_for_writes_to_pause(job: VectorIndexer) -> None:
    waited, _ = await _waited(job, None)
    assert WRITES_PAUSE <= waited < WRITES_PAUSE + 0.4


async def test_writes_that_never_pause_hold_a_round_back_for_the_bound_only(job: VectorIndexer) -> None:
    for _ in range(5):
        waited, longest_gap = await _waited(job, 0.01)
        if longest_gap < WRITES_PAUSE:  # the writes did not pause: only the bound ended the wait
            assert BURST_WAIT - 0.05 < waited < BURST_WAIT + 0.6
            return
        # The writer went unscheduled for a pause's length: the job rightly took it for one.
        assert waited >= WRITES_PAUSE
    pytest.fail("the writer never ran without a pause in five tries (the machine is too loaded to tell)")
