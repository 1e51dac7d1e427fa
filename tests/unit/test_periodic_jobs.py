"""``run_periodically``: the rounds of a background job, its pauses after success and failure, what its failures
tell, and how it ends (cancelled, never by an error of a round)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from registry.errors import DatabaseUnavailable
from registry.tasks import cancel_and_wait, run_periodically


class Clock:
    """The job's ``wait``: records each pause and lets the test stop the job after some rounds."""

    def __init__(self, rounds: int) -> None:
        self.pauses: list[float] = []
        self.rounds = rounds

    async def wait(self, seconds: float) -> None:
        self.pauses.append(seconds)
        if len(self.pauses) >= self.rounds:
            raise asyncio.CancelledError  # as a stop does, at the job's await


async def test_a_job_pauses_idle_after_a_round_retry_after_an_expected_failure_and_idle_after_a_bug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outcomes: list[Exception | None] = [None, DatabaseUnavailable("the database is unreachable"), KeyError("x"), None]
    failures: list[Exception] = []
    clock = Clock(rounds=len(outcomes))

    async def round_() -> None:
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    with caplog.at_level(logging.INFO), pytest.raises(asyncio.CancelledError):
        await run_periodically("test job", round_, idle=30, retry=5, on_failure=failures.append, wait=clock.wait)
    assert clock.pauses == [30, 5, 30, 30]
    assert [type(error) for error in failures] == [DatabaseUnavailable, KeyError]
    warning, bug = [record for record in caplog.records if record.name == "registry.tasks"]
    assert warning.levelno == logging.WARNING
    assert warning.exc_info is None
    assert warning.getMessage() == "test job failed (the database is unreachable); retrying in 5 s"
    assert bug.levelno == logging.ERROR
    assert bug.exc_info is not None
    assert bug.getMessage() == "test job failed; retrying in 30 s"


async def test_a_job_may_wait_before_its_first_round_and_logs_on_its_own_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rounds: list[int] = []
    clock = Clock(rounds=3)

    async def round_() -> None:
        rounds.append(len(clock.pauses))
        raise OSError("refused")

    own = logging.getLogger("tests.periodic")
    with caplog.at_level(logging.WARNING), pytest.raises(asyncio.CancelledError):
        await run_periodically("late job", round_, idle=60, first_round_now=False, wait=clock.wait, logger=own)
    assert rounds == [1, 2]  # each round after a pause
    assert clock.pauses == [60, 60, 60]  # without a retry interval, failures pause idle too
    assert {record.name for record in caplog.records} == {"tests.periodic"}


async def test_a_started_job_ends_when_stopped() -> None:
    rounds = asyncio.Event()

    async def round_() -> None:
        rounds.set()

    task = asyncio.create_task(run_periodically("stopped job", round_, idle=3600))
    await rounds.wait()
    await cancel_and_wait(task)
    assert task.cancelled()
