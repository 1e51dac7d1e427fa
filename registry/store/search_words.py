"""SQL of refreshing the full-text words of summaries stored under another composition or product gazetteer
(``thing_summaries.search_version``; the job is registry/projections/search_words.py).

A refresh writes the words computed from the summary it read only while the row still holds that summary (compared
by digest, in the statement that writes, so a description written meanwhile keeps the words of its write) and is
still of another version: a refresh never replaces newer words with older ones, and processes that refresh at
once only repeat each other's work.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

from sqlalchemy import text

from registry.store.database import Database
from registry.store.tables import SEARCH_CONFIG

_STALE = text(
    """
    SELECT thing_id, summary::text
    FROM thing_summaries
    WHERE search_version IS DISTINCT FROM :version AND thing_id > :after
    ORDER BY thing_id
    LIMIT :limit
    """
)
_PROGRESS = text(
    """
    SELECT count(*), count(*) FILTER (WHERE search_version = :version) FROM thing_summaries
    """
)


def _weighted(column: str, weight: str) -> str:
    return f"setweight(to_tsvector('{SEARCH_CONFIG}'::regconfig, t.{column}), '{weight}')"


#: The words as registry/store/catalog/writes.py composes them (weights A-D), for a batch in one statement.
_WRITE = text(
    f"""
    UPDATE thing_summaries s
    SET search = {_weighted("a", "A")} || {_weighted("b", "B")} || {_weighted("c", "C")} || {_weighted("d", "D")},
        search_version = :version
    FROM unnest(
        CAST(:ids AS varchar[]), CAST(:digests AS text[]),
        CAST(:a AS text[]), CAST(:b AS text[]), CAST(:c AS text[]), CAST(:d AS text[])
    ) AS t (thing_id, digest, a, b, c, d)
    WHERE s.thing_id = t.thing_id
      AND s.search_version IS DISTINCT FROM :version
      AND md5(s.summary::text) = t.digest
    RETURNING s.thing_id
    """
)


@dataclasses.dataclass(frozen=True, slots=True)
class Stale:
    """A summary whose words are of another version: its id and the summary as stored (JSON)."""

    thing_id: str
    summary_json: str

    @property
    def digest(self) -> str:
        """What the refresh compares the stored summary with when it writes (PostgreSQL's ``md5`` of its text)."""
        return hashlib.md5(self.summary_json.encode(), usedforsecurity=False).hexdigest()


@dataclasses.dataclass(frozen=True, slots=True)
class Refreshed:
    """The words of a stale summary, by full-text weight A, B, C, D."""

    stale: Stale
    texts: tuple[str, str, str, str]


async def stale(database: Database, version: str, after: str, limit: int) -> list[Stale]:
    """Up to ``limit`` summaries after id ``after`` whose words are not of ``version``, in id order."""
    rows = await database.fetch(_STALE, version=version, after=after, limit=limit)
    return [Stale(row[0], row[1]) for row in rows]


async def progress(database: Database, version: str) -> tuple[int, int]:
    """(summaries, summaries whose words are of ``version``)."""
    row = await database.fetchrow(_PROGRESS, version=version)
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


async def write(database: Database, version: str, refreshed: Sequence[Refreshed]) -> int:
    """Write the words of each summary that is as it was read and still stale; how many were written."""
    if not refreshed:
        return 0
    rows = await database.fetch(
        _WRITE,
        version=version,
        ids=[item.stale.thing_id for item in refreshed],
        digests=[item.stale.digest for item in refreshed],
        a=[item.texts[0] for item in refreshed],
        b=[item.texts[1] for item in refreshed],
        c=[item.texts[2] for item in refreshed],
        d=[item.texts[3] for item in refreshed],
    )
    return len(rows)


__all__ = ["Refreshed", "Stale", "progress", "stale", "write"]
