"""Full-text words kept in step with how they are composed: a background job computes again the words of every
description stored under another composition or product gazetteer (``thing_summaries.search_version``), in id
order, a batch at a time.

A description's words are written with it (registry/projections/catalog.py), and they include what the products it
names are known for (registry/descriptions/gazetteer.py): after an upgrade that changes the list, or the way the
words are composed, rows stored before hold the old words. This job reads their summaries as stored, computes
their words as a write would, and writes them where the row is still as it was read (registry/store/
search_words.py). It is resumable by construction: what is left is read from the database each round, so a
restart or a crash picks up where it is. It runs whether or not vectors are on: full-text search is the one
search without them. A round runs at start and then every ``IDLE`` seconds (rows of another version appear only
while servers of two releases write at once); ``/readyz`` and ``/metrics`` show its progress.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import msgspec

from registry.descriptions.summary import SEARCH_TEXTS, Summary
from registry.ops.metrics import SEARCH_WORDS_CURRENT, SEARCH_WORDS_FAILURES, SEARCH_WORDS_STALE
from registry.store import search_words
from registry.store.database import Database
from registry.tasks import DATABASE_AWAY, cancel_and_wait, run_periodically

log = logging.getLogger(__name__)

#: Descriptions refreshed per batch (one read and one write statement).
BATCH = 500
#: Seconds between rounds, and after a failed round.
IDLE = 60.0
RETRY = 5.0


def texts_of(stale: Sequence[search_words.Stale]) -> list[search_words.Refreshed]:
    """The words of each stale summary as a write composes them; a summary that does not read as one is left
    (and stays stale, which ``/readyz`` shows)."""
    refreshed = []
    for item in stale:
        try:
            summary = msgspec.json.decode(item.summary_json, type=Summary)
        except msgspec.MsgspecError as error:
            log.warning(
                "the full-text words of %s are not refreshed: its summary does not read (%s)", item.thing_id, error
            )
            continue
        refreshed.append(search_words.Refreshed(item, summary.search_texts()))
    return refreshed


class SearchWordsRefresh:
    """The refresh job and its progress."""

    def __init__(self, database: Database, version: str = SEARCH_TEXTS) -> None:
        self.database = database
        #: The composition and gazetteer of this server's words.
        self.version = version
        self.total = 0
        self.current = 0
        #: Whether a round has counted the rows (before, the progress is unknown).
        self.counted = False
        self.problem: str | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(
            run_periodically(
                "full-text words refresh",
                self._round,
                idle=IDLE,
                retry=RETRY,
                on_failure=self._failed,
                logger=log,
            ),
            name="search-words-refresh",
        )

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def _round(self) -> None:
        await self.refresh()
        self.problem = None

    def _failed(self, error: Exception) -> None:
        # A bug is named by its type: its message alone may not say what it is.
        self.problem = str(error) if isinstance(error, DATABASE_AWAY) else f"{type(error).__name__}: {error}"
        SEARCH_WORDS_FAILURES.inc()

    async def refresh(self) -> int:
        """Compute again the words of every summary of another version; returns how many were written."""
        await self._progress()
        if self.current >= self.total:
            return 0
        log.info(
            "full-text words of %d of %d descriptions to refresh (%s)",
            self.total - self.current,
            self.total,
            self.version,
        )
        count, after = 0, ""
        while batch := await search_words.stale(self.database, self.version, after, BATCH):
            refreshed = await asyncio.to_thread(texts_of, batch)
            written = await search_words.write(self.database, self.version, refreshed)
            count += written
            self.current = min(self.total, self.current + written)  # counted again below: a count reads every row
            self._show()
            after = batch[-1].thing_id
        await self._progress()
        log.info("full-text words refreshed: %d descriptions", count)
        return count

    async def _progress(self) -> None:
        self.total, self.current = await search_words.progress(self.database, self.version)
        self.counted = True
        self._show()

    def _show(self) -> None:
        SEARCH_WORDS_CURRENT.set(self.current)
        SEARCH_WORDS_STALE.set(max(0, self.total - self.current))

    def state(self) -> tuple[bool, str]:
        """(degraded, detail) for ``/readyz``: refreshing, failing, or every description's words current."""
        if self.problem is not None:
            return True, f"the full-text words refresh fails ({self.problem}); {self.current} of {self.total} current"
        if not self.counted:
            return True, "not counted yet"
        if self.current < self.total:
            return True, f"refreshing: {self.current} of {self.total} descriptions' words current ({self.version})"
        return False, f"{self.current} of {self.total} descriptions' words current ({self.version})"


__all__ = ["BATCH", "SearchWordsRefresh", "texts_of"]
