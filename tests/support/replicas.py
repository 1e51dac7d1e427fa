"""Helpers for tests of read replicas (``registry.store.replica``)."""

from __future__ import annotations

import asyncio

from registry.store.replica import ReadReplica


async def problem_once_probed(replica: ReadReplica) -> str:
    """Why ``replica`` is set aside after its first probe (10 s at most; the first probe runs at start)."""
    await replica.start()
    try:
        for _ in range(200):
            if replica.problem != "not measured yet":
                break
            await asyncio.sleep(0.05)
    finally:
        await replica.stop()
    assert replica.problem is not None
    return replica.problem
