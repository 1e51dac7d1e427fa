"""Rate limits shared by server processes through PostgreSQL (registry/auth/quotas.py): two limiters on the same
database stand for two replicas behind a load balancer."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from registry.auth.principal import Scope
from registry.auth.quotas import RateLimits
from registry.config import Settings
from registry.errors import DatabaseUnavailable, TooManyRequests
from registry.store.database import Database


@pytest.fixture
async def replicas(database: Database) -> AsyncIterator[tuple[RateLimits, RateLimits]]:
    settings = Settings(rate_limit_writes="10/hour")
    first, second = RateLimits(settings), RateLimits(settings)
    await first.start(database)
    await second.start(database)
    yield first, second
    await first.stop()
    await second.stop()


def allowed(limits: RateLimits, who: str, times: int, scope: Scope = Scope.WRITE) -> int:
    """How many of ``times`` requests in a row pass."""
    passed = 0
    for _ in range(times):
        try:
            limits.hit(scope, who)
        except TooManyRequests:
            break
        passed += 1
    return passed


async def test_a_client_spread_over_replicas_gets_its_limit_once(replicas: tuple[RateLimits, RateLimits]) -> None:
    first, second = replicas
    who = f"key:{uuid.uuid4()}"
    assert allowed(first, who, 6) == 6
    await first.sync()
    # The second replica knows of the first one's six after its own sync (it reads the sums back).
    assert allowed(second, who, 1) == 1
    await second.sync()
    assert allowed(second, who, 10) == 3
    await second.sync()
    # The first replica's view is that of its last sync (6): it lets one more through (the overshoot is what the
    # others counted since a replica's last sync), and refuses once the sync tells it of the others' counts.
    assert allowed(first, who, 1) == 1
    await first.sync()
    with pytest.raises(TooManyRequests) as refused:
        first.hit(Scope.WRITE, who)
    assert int(refused.value.headers["Retry-After"]) > 0
    # Other clients and other kinds of request are counted apart.
    assert allowed(first, f"key:{uuid.uuid4()}", 3) == 3
    first.hit(Scope.READ, who)  # no read limit


async def test_counts_wait_for_a_database_that_did_not_answer(database: Database) -> None:
    """A sync that fails keeps its counts for the next one: nothing counted is forgiven."""
    limits = RateLimits(Settings(rate_limit_writes="5/hour"))
    await limits.start(database)
    other = RateLimits(Settings(rate_limit_writes="5/hour"))
    await other.start(database)
    who = f"key:{uuid.uuid4()}"
    try:
        assert allowed(limits, who, 3) == 3
        await database.close()
        with pytest.raises(DatabaseUnavailable):
            await limits.sync()
        await database.open()
        await limits.sync()
        assert allowed(other, who, 1) == 1
        await other.sync()
        assert allowed(other, who, 5) == 1  # 3 + 1 + 1
    finally:
        await limits.stop()
        await other.stop()


def test_the_limit_slides_rather_than_resetting_at_a_window_boundary() -> None:
    """Within one process (no database): a burst at the end of a window still counts early in the next one."""
    now = [1_000_000.5]
    limits = RateLimits(Settings(rate_limit_reads="4/second"), clock=lambda: now[0])
    who = f"address:{uuid.uuid4()}"
    assert allowed(limits, who, 6, Scope.READ) == 4
    now[0] = 1_000_001.1  # 0.1 s into the next window: 90 % of the last one still weighs (3.6 of 4)
    with pytest.raises(TooManyRequests) as refused:
        limits.hit(Scope.READ, who)
    assert refused.value.headers["Retry-After"] == "1"  # one fits from 0.25 s into the window, 0.15 s from now
    now[0] = 1_000_001.6  # 40 % weighs: 1.6, so two more fit
    assert allowed(limits, who, 4, Scope.READ) == 2
    now[0] = 1_000_003.0  # two windows later nothing weighs
    assert allowed(limits, who, 5, Scope.READ) == 4


async def test_counts_on_their_way_to_the_database_still_count(database: Database) -> None:
    """Requests that arrive while a sync is adding the counts before them see those counts."""
    limits = RateLimits(Settings(rate_limit_writes="5/hour"))
    await limits.start(database)
    who = f"key:{uuid.uuid4()}"
    try:
        assert allowed(limits, who, 5) == 5
        syncing = asyncio.create_task(limits.sync())
        await asyncio.sleep(0)  # the sync has taken its counts and waits for the database
        assert allowed(limits, who, 3) == 0
        await syncing
        assert allowed(limits, who, 3) == 0
    finally:
        await limits.stop()
