"""The vector backfill waits for a burst of writes to pause (or for a bound) before a round, and no longer."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from registry.embeddings import indexer
from registry.embeddings.indexer import VectorIndexer


@pytest.fixture
def job(monkeypatch: pytest.MonkeyPatch) -> VectorIndexer:
    monkeypatch.setattr(indexer, "WRITES_PAUSE", 0.05)
    monkeypatch.setattr(indexer, "BURST_WAIT", 0.4)
    database: Any = None  # never reached: only the waiting is exercised
    return VectorIndexer(database, None)


async def _waited(job: VectorIndexer, nudge_every: float | None) -> float:
    async def writes() -> None:
        while nudge_every is not None:
            job.nudge()
            await asyncio.sleep(nudge_every)

    writer = asyncio.create_task(writes())
    started = time.monotonic()
    await job._until_writes_pause()
    waited = time.monotonic() - started
    writer.cancel()
    return waited


async def test_a_round_waits_for_writes_to_pause(job: VectorIndexer) -> None:
    assert await _waited(job, None) < 0.3


async def test_writes_that_never_pause_hold_a_round_back_for_the_bound_only(job: VectorIndexer) -> None:
    assert 0.35 < await _waited(job, 0.01) < 1.0
