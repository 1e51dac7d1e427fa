"""A read replica's measurement in process, the primary's and the replica's probes stood in for: the lag from the
noted WAL positions, each reason a replica is set aside, and when it serves without the primary."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest

from registry.errors import DatabaseUnavailable, RegistryError
from registry.store import replica as module
from registry.store.replica import ReadReplica

REVISION = "r1"


def _replica(primary: Any, standby: Any, *, max_lag: float = 10.0) -> ReadReplica:
    """A replica whose probes answer ``primary`` and ``standby`` (a row, or an exception to raise)."""
    replica = ReadReplica(
        cast(Any, SimpleNamespace(name="primary")),
        "postgresql://replica/registry",
        connections=1,
        max_lag=max_lag,
        schema_revision=REVISION,
    )
    replica.database = cast(Any, SimpleNamespace(is_open=True))

    async def probe(database: Any, role: str, query: str) -> Any:
        answer = primary if role == "replica-probe" else standby
        if callable(answer):
            return await answer()
        if isinstance(answer, BaseException):
            raise answer
        return answer

    replica._probe = probe  # type: ignore[method-assign]
    return replica


def _measure(replica: ReadReplica, now: float = 100.0) -> Any:
    return asyncio.run(replica._measure(now))


def test_a_replica_that_replayed_the_noted_position_is_as_old_as_the_note() -> None:
    replica = _replica((1000, 900), (True, 1000, REVISION, "streaming", True))
    lag = _measure(replica, now=5.0)
    assert isinstance(lag, float)
    assert replica._reached_at == 5.0
    assert list(replica._positions) == [(5.0, 1000)]
    assert replica._flushed == 900


def test_the_newest_note_reached_is_kept_and_the_older_ones_dropped() -> None:
    replica = _replica((2000, 2000), (True, 1500, REVISION, "streaming", True))
    replica._positions.extend([(1.0, 500), (2.0, 1200)])
    _measure(replica, now=3.0)
    assert replica._reached_at == 2.0
    assert list(replica._positions) == [(2.0, 1200), (3.0, 2000)]


def test_a_position_behind_the_last_note_is_another_primary_whose_notes_start_afresh() -> None:
    replica = _replica((100, 100), (True, 100, REVISION, "streaming", True))
    replica._positions.append((1.0, 5000))
    _measure(replica, now=2.0)
    assert list(replica._positions) == [(2.0, 100)]


@pytest.mark.parametrize(
    ("primary", "standby", "message"),
    [
        ((1000, 1000), (True, 500, REVISION, "streaming", True), "catching up: it has not replayed any"),
        ((1000, 1000), (False, 1000, REVISION, None, True), "not a streaming replica (not in recovery)"),
        ((1000, 1000), (True, None, REVISION, None, True), "not a streaming replica (not in recovery)"),
        ((1000, 1000), (True, 1000, "r0", None, True), "its schema is at revision r0, this code needs r1"),
        ((1000, 1000), RegistryError("refused"), "unreachable (refused)"),
        (
            RegistryError("odd"),
            (True, 1000, REVISION, None, True),
            "the primary's WAL position could not be read (odd)",
        ),
        (
            DatabaseUnavailable("down"),
            (True, 1000, REVISION, "hidden", True),
            "the primary is unreachable (down), and the replica's role cannot see whether it still streams",
        ),
        (
            DatabaseUnavailable("down"),
            (True, 1000, REVISION, "streaming", True),
            "the primary is unreachable (down) from here, but the replica still streams from it",
        ),
        (
            DatabaseUnavailable("down"),
            (True, 1000, REVISION, None, True),
            "the primary is unreachable (down), and the replica had not replayed all",
        ),
    ],
)
def test_a_replica_that_cannot_serve_says_why(primary: Any, standby: Any, message: str) -> None:
    with pytest.raises(module._Unusable) as refused:
        _measure(_replica(primary, standby))
    assert str(refused.value).startswith(message)


def test_a_replica_that_lost_the_primary_too_serves_what_it_replayed() -> None:
    replica = _replica(DatabaseUnavailable("down"), (True, 1000, REVISION, None, True))
    replica._positions.append((1.0, 1000))
    replica._flushed = 1000
    assert _measure(replica) == module._PrimaryUnreachable("down")


def test_a_primary_that_does_not_answer_in_half_the_bound_is_unreachable() -> None:
    async def never() -> Any:
        await asyncio.Event().wait()

    replica = _replica(never, (True, 1000, REVISION, None, True), max_lag=0.2)
    replica._positions.append((1.0, 1000))
    replica._flushed = 1000
    assert _measure(replica) == module._PrimaryUnreachable("no answer within 0.1 s")
