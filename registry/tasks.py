"""Background tasks of a component (a sync loop, a watcher, a supervisor, a periodic job): how a periodic job runs
its rounds, and how tasks end when the component stops."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from registry.errors import RegistryError

log = logging.getLogger(__name__)

#: What a round of a job that reads or writes the database expects to fail with while the database is away.
DATABASE_AWAY: tuple[type[Exception], ...] = (RegistryError, OSError)


def _no_failure(error: Exception) -> None:
    return None


def _detail(error: Exception) -> str:
    return error.detail if isinstance(error, RegistryError) else str(error)


async def run_periodically(
    name: str,
    round_: Callable[[], Awaitable[object]],
    *,
    idle: float,
    retry: float | None = None,
    expected: tuple[type[Exception], ...] = DATABASE_AWAY,
    on_failure: Callable[[Exception], None] = _no_failure,
    first_round_now: bool = True,
    wait: Callable[[float], Awaitable[object]] = asyncio.sleep,
    logger: logging.Logger = log,
) -> None:
    """Run ``round_`` until cancelled: now (or after ``idle`` seconds without ``first_round_now``), then ``idle``
    seconds after each round that succeeds.

    A round that fails with an ``expected`` error (the database is away) is logged as a warning without a traceback
    and run again after ``retry`` seconds (``idle`` if None); any other error is a bug: logged with its traceback,
    and the job goes on after ``idle`` seconds, so that a bug in one round does not end it. ``on_failure`` learns of
    every failure (what ``/readyz`` and ``/metrics`` show of the job). ``wait`` waits between rounds (a job that
    wakes early on news passes its own). ``name`` says what the job does, in its log lines on ``logger`` (the
    job's own).
    """
    pause_after_failure = idle if retry is None else retry
    if not first_round_now:
        await wait(idle)
    while True:
        try:
            await round_()
        except expected as error:  # expected: no traceback
            on_failure(error)
            logger.warning("%s failed (%s); retrying in %g s", name, _detail(error), pause_after_failure)
            pause = pause_after_failure
        except Exception as error:
            on_failure(error)
            logger.exception("%s failed; retrying in %g s", name, idle)
            pause = idle
        else:
            pause = idle
        await wait(pause)


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel every task given (None: one never started), then wait until each has ended. The CancelledError a
    cancelled task ends with is what stopping it asks for, so it is not raised here; any other error is."""
    running = [task for task in tasks if task is not None]
    for task in running:
        task.cancel()
    for task in running:
        with contextlib.suppress(asyncio.CancelledError):
            await task


__all__ = ["DATABASE_AWAY", "cancel_and_wait", "run_periodically"]
