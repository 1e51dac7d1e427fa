"""Vectors kept in step with the catalogue: a background job embeds every description whose vectors are missing,
stale (written at an older revision) or of another model, in id order, a batch at a time.

The job is resumable by construction: what it has to do is read from the database each round (descriptions whose
vector row is not at their revision and model), so a restart, a crash or a model change picks up where it is. A
write wakes it through the change feed, so a new description is searchable by meaning within a round; the vectors
are computed off the event loop (registry/embeddings/). Where the database has no pgvector, or the provider is off,
the job does not run and searches are lexical; ``/readyz`` and each search answer say so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Sequence
from typing import Any

import msgspec

from registry.descriptions.gazetteer import gazetteer, summary_purposes
from registry.descriptions.summary import name_words
from registry.embeddings.provider import EmbeddingError, Embeddings
from registry.ops.metrics import EMBEDDED, EMBEDDING_FAILURES, EMBEDDING_PENDING
from registry.store import vectors
from registry.store.database import Database
from registry.tasks import DATABASE_AWAY, cancel_and_wait, run_periodically

log = logging.getLogger(__name__)

#: Descriptions embedded per batch.
BATCH = 256
#: A round with at least this many descriptions to embed, and at least half of them, fills in bulk: the HNSW index
#: is dropped while the vectors are written and built once they are (registry/store/vectors.py).
BULK_FROM = 10_000
#: Seconds between rounds when nothing wakes the job, and after a failed round.
IDLE = 30.0
RETRY = 5.0
#: Written descriptions are embedded once writes pause for this many seconds, or at the latest this long after the
#: first of a burst: a burst becomes a few large rounds, each of which counts and scans the table once, not a round
#: per group of writes competing with the writes for the database.
WRITES_PAUSE = 0.5
BURST_WAIT = 5.0


#: How the texts below are composed, and which product gazetteer they read: stored with the model's identity, so
#: that a change of either has every vector computed again.
TEXTS = f"texts-3+gazetteer-{gazetteer().version}"
#: Words of names that say where a name is published, not what it does (``io.github.x/mcp-server-y``).
NAME_BOILERPLATE = frozenset({"io", "com", "org", "net", "github", "mcp", "server"})
_JOINED = re.compile(r"[./:_@-]")


def name_text(name: str | None) -> str | None:
    """A name as its vector reads it: a plain name as it is; one spelled as a path or domain
    (``io.github.redis/mcp-redis``) as the words of its last segment, publishing boilerplate left out (``redis``):
    the words every such name shares would make every server resemble every other."""
    if not name or not _JOINED.search(name):
        return name
    words = [word for word in name_words(name.rsplit("/", 1)[-1]) if word.lower() not in NAME_BOILERPLATE]
    return " ".join(words) or None


def description_text(summary: dict[str, Any]) -> str:
    """What the vector of a description is computed from: its title and description, and what the products it
    names are known for (registry/descriptions/gazetteer.py); its kind when it has none of these, so that every
    description has its vector."""
    parts = (name_text(summary.get("title")), summary.get("description"), summary_purposes(summary))
    text = " ".join(filter(None, parts))
    return text or str(summary.get("kind", "thing"))


def capability_text(capability: dict[str, Any]) -> str:
    """What the vector of a capability, action or skill is computed from: name, description, tags, examples."""
    parts = [name_text(capability.get("name")), capability.get("description"), *capability.get("tags", [])]
    return " ".join(filter(None, [*parts, *capability.get("examples", [])]))


def texts_of(summary: dict[str, Any]) -> list[tuple[int, str]]:
    """(part, text) of a description: part -1 for itself, the position of each capability for it."""
    texts = [(vectors.DESCRIPTION_PART, description_text(summary))]
    texts += [(position, capability_text(item)) for position, item in enumerate(summary.get("capabilities", []))]
    return [(part, text) for part, text in texts if text.strip()]


def bulk(total: int, done: int) -> bool:
    """Whether a round with ``total`` descriptions, ``done`` of them embedded, fills in bulk (see ``BULK_FROM``)."""
    pending = total - done
    return pending >= BULK_FROM and 2 * pending >= total


class VectorIndexer:
    """The backfill job and what searches need of it: whether vectors answer, the provider, the progress."""

    def __init__(self, database: Database, provider: Embeddings | None) -> None:
        self.database = database
        self.provider = provider
        #: Whether the database has the vector table (known once started).
        self.available = False
        #: Why searches are lexical, while they are.
        self.reason = "embeddings are off (REGISTRY_EMBEDDINGS=off)" if provider is None else "not started"
        self.total = 0
        self.done = 0
        self.problem: str | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def model(self) -> str:
        """What is stored beside each vector: the provider's model and how the texts are composed."""
        return "" if self.provider is None else f"{self.provider.identity}/{TEXTS}"

    @property
    def serving(self) -> bool:
        """Whether searches can use vectors (some may still be missing while the backfill runs)."""
        return self.available and self.provider is not None

    async def start(self) -> None:
        if self.provider is None:
            return
        self.available = await vectors.present(self.database)
        if not self.available:
            self.reason = "the database has no pgvector extension: needs are answered by full-text search alone"
            log.warning("natural-language search is lexical only: %s", self.reason)
            return
        self.reason = ""
        self._task = asyncio.create_task(
            run_periodically(
                "vector backfill",
                self._round,
                idle=IDLE,
                retry=RETRY,
                expected=(EmbeddingError, *DATABASE_AWAY),
                on_failure=self._failed,
                wait=self._until_woken,
                logger=log,
            ),
            name="vector-backfill",
        )

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        if self.provider is not None:
            await self.provider.close()

    def nudge(self, changes: Sequence[object] = ()) -> None:
        """Wake the job (a change feed consumer: written descriptions need vectors)."""
        self._wake.set()

    async def _round(self) -> None:
        self._wake.clear()
        await self.backfill()
        self.problem = None

    def _failed(self, error: Exception) -> None:
        self.problem = str(error)
        EMBEDDING_FAILURES.inc()

    async def _until_woken(self, seconds: float) -> None:
        """Wait ``seconds``, or until a write wakes the job and writes pause."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)
        if self._wake.is_set():
            await self._until_writes_pause()

    async def _until_writes_pause(self) -> None:
        """Wait while writes keep waking the job, until they pause for WRITES_PAUSE, BURST_WAIT at most."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BURST_WAIT
        while (left := deadline - loop.time()) > 0:
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), min(WRITES_PAUSE, left))
            except TimeoutError:
                return

    async def backfill(self) -> int:
        """Embed every description whose vectors are not up to date; returns how many were embedded."""
        assert self.provider is not None
        model = self.model
        await self._progress(model)
        if bulk(self.total, self.done):
            dropped = await vectors.drop_index(self.database)
            log.info(
                "vector backfill of %d of %d descriptions %s",
                self.total - self.done,
                self.total,
                "in bulk" if dropped else "into the index (searches held the table)",
            )
        count = await self._fill(model)
        # Built after a bulk fill, or where a process stopped during one left it dropped; reached only when nothing
        # is left to embed, so a process filling in bulk is not slowed by another building it under it.
        if await vectors.build_index(self.database):
            log.info("vector index built")
        if count:
            await self._progress(model)
        return count

    async def _fill(self, model: str) -> int:
        """Embed and write every pending description, a batch at a time."""
        count = 0
        batch = await vectors.pending(self.database, model, "", BATCH)
        # The next batch is embedded (in the executor) while this one is written (by PostgreSQL).
        embedding = asyncio.ensure_future(self._embedded(batch))
        try:
            while batch:
                embedded = await embedding
                following = await vectors.pending(self.database, model, batch[-1].thing_id, BATCH)
                embedding = asyncio.ensure_future(self._embedded(following))
                await vectors.write(self.database, model, embedded)
                count += len(batch)
                self.done = min(self.total, self.done + len(batch))  # counted again below: a count reads every row
                EMBEDDED.set(self.done)
                EMBEDDING_PENDING.set(max(0, self.total - self.done))
                batch = following
        finally:
            embedding.cancel()
        return count

    async def _embedded(self, batch: Sequence[vectors.Pending]) -> list[vectors.Embedded]:
        assert self.provider is not None
        parts = [texts_of(msgspec.json.decode(item.summary_json)) for item in batch]
        flat = await self.provider.embed([text for texts in parts for _, text in texts])
        embedded, start = [], 0
        for item, texts in zip(batch, parts, strict=True):
            chosen = flat[start : start + len(texts)]
            start += len(texts)
            numbered = [(part, vector) for (part, _), vector in zip(texts, chosen, strict=True)]
            embedded.append(vectors.Embedded(item.thing_id, item.revision, numbered))
        return embedded

    async def _progress(self, model: str) -> None:
        self.total, self.done = await vectors.progress(self.database, model)
        EMBEDDED.set(self.done)
        EMBEDDING_PENDING.set(max(0, self.total - self.done))

    def state(self) -> tuple[bool, str]:
        """(degraded, detail) for ``/readyz``: lexical only, backfilling, failing, or every description embedded."""
        if not self.serving:
            return True, f"lexical only: {self.reason}"
        assert self.provider is not None
        if self.problem is not None:
            return True, f"the vector backfill fails ({self.problem}); {self.done} of {self.total} embedded"
        if self.done < self.total:
            return True, f"backfilling: {self.done} of {self.total} descriptions embedded ({self.model})"
        return False, f"{self.done} of {self.total} descriptions embedded ({self.model})"


__all__ = ["BULK_FROM", "VectorIndexer", "bulk", "capability_text", "description_text", "texts_of"]
