"""Group commit: writes that arrive while transactions run share the next one, each keeping its own outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from registry.directory.group_commit import GroupCommit


class Ledger:
    """A commit function that records its groups; a group containing ``refused`` fails as a whole, and a commit
    can be held open until ``release`` is set."""

    def __init__(self, refused: str | None = None) -> None:
        self.groups: list[list[str]] = []
        self.refused = refused
        self.hold = False
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def commit(self, items: Sequence[str]) -> list[str]:
        self.groups.append(list(items))
        if self.hold:
            self.hold = False
            self.holding.set()
            await self.release.wait()
        await asyncio.sleep(0.01)
        if self.refused in items:
            raise ValueError(f"{self.refused} refused")
        return [f"stored {item}" for item in items]


def grouped(ledger: Ledger, concurrency: int = 1) -> GroupCommit[str, str]:
    return GroupCommit(ledger.commit, key=lambda item: item.split("#")[0], concurrency=concurrency)


async def test_a_lone_write_commits_at_once_and_later_ones_share_the_next_transaction() -> None:
    ledger = Ledger()
    group = grouped(ledger)
    first = asyncio.create_task(group.submit("a"))
    await asyncio.sleep(0)  # "a" is being committed
    rest = [asyncio.create_task(group.submit(item)) for item in ("b", "c", "d")]
    assert await first == "stored a"
    assert await asyncio.gather(*rest) == ["stored b", "stored c", "stored d"]
    assert ledger.groups == [["a"], ["b", "c", "d"]]


async def test_writes_submitted_one_after_another_are_all_committed() -> None:
    """A write submitted just as the committer finds nothing more to do still gets a committer."""
    ledger = Ledger()
    group = grouped(ledger)
    for item in ("a", "b", "c"):
        assert await group.submit(item) == f"stored {item}"
    assert ledger.groups == [["a"], ["b"], ["c"]]


async def test_two_writes_of_one_key_go_in_separate_transactions_in_order() -> None:
    ledger = Ledger()
    group = grouped(ledger)
    blocker = asyncio.create_task(group.submit("z"))
    await asyncio.sleep(0)
    results = await asyncio.gather(group.submit("a#1"), group.submit("b"), group.submit("a#2"))
    await blocker
    assert results == ["stored a#1", "stored b", "stored a#2"]
    assert ledger.groups == [["z"], ["a#1", "b"], ["a#2"]]


async def test_a_failed_transaction_is_retried_write_by_write_so_only_the_culprit_fails() -> None:
    ledger = Ledger(refused="bad")
    group = grouped(ledger)
    blocker = asyncio.create_task(group.submit("z"))
    await asyncio.sleep(0)
    results = await asyncio.gather(group.submit("a"), group.submit("bad"), group.submit("c"), return_exceptions=True)
    await blocker
    assert results[0] == "stored a"
    assert results[2] == "stored c"
    assert isinstance(results[1], ValueError)
    assert ledger.groups == [["z"], ["a", "bad", "c"], ["a"], ["bad"], ["c"]]


async def test_a_held_transaction_holds_up_only_its_own_group() -> None:
    ledger = Ledger()
    ledger.hold = True
    group = grouped(ledger, concurrency=2)
    held = asyncio.create_task(group.submit("held"))
    await ledger.holding.wait()
    assert await asyncio.wait_for(group.submit("other"), 2) == "stored other"
    assert not held.done()
    ledger.release.set()
    assert await held == "stored held"


async def test_a_write_whose_caller_left_before_its_turn_is_not_committed() -> None:
    ledger = Ledger()
    group = grouped(ledger)
    blocker = asyncio.create_task(group.submit("z"))
    await asyncio.sleep(0)
    gone = asyncio.create_task(group.submit("gone"))
    kept = asyncio.create_task(group.submit("kept"))
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert await kept == "stored kept"
    await blocker
    assert ledger.groups == [["z"], ["kept"]]
