"""``cancel_and_wait``: how a component's background tasks end when it stops."""

from __future__ import annotations

import asyncio

import pytest

from registry.tasks import cancel_and_wait


async def test_every_task_is_cancelled_and_has_ended_on_return() -> None:
    ended: list[str] = []

    async def loop(name: str) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0)  # cleanup that itself awaits is waited for
            ended.append(name)

    tasks = [asyncio.create_task(loop(name)) for name in ("sync", "watch")]
    await asyncio.sleep(0)
    await cancel_and_wait(tasks[0], None, tasks[1])
    assert ended == ["sync", "watch"]
    assert all(task.cancelled() for task in tasks)


async def test_nothing_to_stop_and_tasks_already_done_are_fine() -> None:
    await cancel_and_wait()
    await cancel_and_wait(None)
    done = asyncio.create_task(asyncio.sleep(0))
    await done
    await cancel_and_wait(done)


async def test_a_task_that_failed_raises_its_error() -> None:
    async def fail() -> None:
        raise RuntimeError("the loop broke")

    failed = asyncio.create_task(fail())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="the loop broke"):
        await cancel_and_wait(failed)
