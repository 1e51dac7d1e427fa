"""Background tasks of a component (a sync loop, a watcher, a supervisor): how they end when it stops."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel every task given (None: one never started), then wait until each has ended. The CancelledError a
    cancelled task ends with is what stopping it asks for, so it is not raised here; any other error is."""
    running = [task for task in tasks if task is not None]
    for task in running:
        task.cancel()
    for task in running:
        with contextlib.suppress(asyncio.CancelledError):
            await task


__all__ = ["cancel_and_wait"]
