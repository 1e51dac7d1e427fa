"""SQL of the vectors of descriptions (pgvector): which descriptions need vectors, writing them, nearest neighbours.

The table ``description_vectors`` exists only where the database offers pgvector (migration
0017_description_vectors); it is not in registry/store/tables.py's metadata for that reason, and is spelled here.
``part`` -1 holds the description's vector, 0 and up those of its capabilities (``thing_capabilities.position``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

import asyncpg
from sqlalchemy import Float, Integer, Text, bindparam, cast, column, func, select, table, text
from sqlalchemy.types import UserDefinedType

from registry.store.catalog.rows import Filters
from registry.store.catalog.search import filter_conditions
from registry.store.database import Database, Executor
from registry.store.tables import descriptions, thing_summaries

DESCRIPTION_PART = -1

vectors = table(
    "description_vectors",
    column("thing_id", Text),
    column("part", Integer),
    column("revision", Integer),
    column("model", Text),
    column("embedding", Text),
)

_PRESENT = text("SELECT to_regclass('description_vectors') IS NOT NULL")
_PENDING = text(
    """
    SELECT s.thing_id, d.revision, s.summary::text
    FROM thing_summaries s
    JOIN descriptions d ON d.id = s.thing_id
    LEFT JOIN description_vectors v ON v.thing_id = s.thing_id AND v.part = -1
    WHERE (v.thing_id IS NULL OR v.revision <> d.revision OR v.model <> :model) AND s.thing_id > :after
    ORDER BY s.thing_id
    LIMIT :limit
    """
)
_PROGRESS = text(
    """
    SELECT
        (SELECT count(*) FROM thing_summaries),
        (SELECT count(*) FROM description_vectors v JOIN descriptions d ON d.id = v.thing_id
         WHERE v.part = -1 AND v.model = :model AND v.revision = d.revision)
    """
)
#: The HNSW index of migration 0017_description_vectors, spelled as it does (tests/unit/test_embeddings.py): the
#: bulk path drops it and builds it again once the vectors are written.
INDEX = "ix_description_vectors_embedding_256"
INDEX_DDL = (
    f"CREATE INDEX {INDEX} ON description_vectors "
    "USING hnsw ((embedding::vector(256)) vector_cosine_ops) WHERE vector_dims(embedding) = 256"
)
_INDEX_PRESENT = text(f"SELECT to_regclass('{INDEX}') IS NOT NULL")
_INDEX_LOCK = text("SELECT pg_advisory_xact_lock(hashtext('registry:description_vectors:index'))")
#: Memory for building the index: a graph that fits is built several times faster than one that does not.
INDEX_BUILD_MEMORY = "256MB"
#: How long dropping the index waits for the searches running on the table.
DROP_WAIT = "5s"
#: Seconds building the index may take (a graph of millions of vectors takes minutes on two cores).
INDEX_BUILD_SECONDS = 3600.0
_DELETE = text("DELETE FROM description_vectors WHERE thing_id = ANY(CAST(:ids AS varchar[]))")
#: Written only while the description is there (a description deleted meanwhile leaves no vectors); one statement
#: for a batch.
#: The vectors arrive as one flat ``real[]`` (sent in binary, no text to format or parse), row ``n`` of the ids
#: holding the slice ``[(n - 1) * dimensions + 1, n * dimensions]``.
_INSERT = text(
    """
    INSERT INTO description_vectors (thing_id, part, revision, model, embedding)
    SELECT t.thing_id, t.part, t.revision, :model,
           CAST((CAST(:embeddings AS real[]))[(t.n - 1) * :dimensions + 1 : t.n * :dimensions] AS vector)
    FROM unnest(CAST(:ids AS varchar[]), CAST(:parts AS integer[]), CAST(:revisions AS bigint[]))
         WITH ORDINALITY AS t (thing_id, part, revision, n)
    WHERE EXISTS (SELECT 1 FROM descriptions WHERE id = t.thing_id)
    """
)


@dataclasses.dataclass(frozen=True, slots=True)
class Pending:
    """A description whose vectors are missing, stale or of another model."""

    thing_id: str
    revision: int
    summary_json: str


@dataclasses.dataclass(frozen=True, slots=True)
class Embedded:
    """The vectors of one description: its own (part -1) and its capabilities' (by position)."""

    thing_id: str
    revision: int
    parts: Sequence[tuple[int, list[float]]]


@dataclasses.dataclass(frozen=True, slots=True)
class Near:
    """A description near a need: its best similarity (cosine, -1..1) and its parts by similarity."""

    thing_id: str
    similarity: float
    #: (part, similarity), the best first; part -1 is the description itself.
    parts: list[tuple[int, float]]
    summary: dict[str, Any]
    modified: dt.datetime
    expires: dt.datetime | None
    #: The best similarity of the same parts to a second vector (``nearest``'s ``also``), if one was given.
    also: float | None = None


class VectorType(UserDefinedType[str]):
    """pgvector's ``vector(n)``."""

    cache_ok = True

    def __init__(self, dimensions: int) -> None:
        self.dimensions = int(dimensions)

    def get_col_spec(self, **kw: Any) -> str:
        return f"vector({self.dimensions})"


def _distance(vector: Sequence[float], dimensions: int, name: str = "vector") -> Any:
    """Cosine distance of each stored vector (as ``vector(dimensions)``: the HNSW index's expression) to ``vector``."""
    typed = VectorType(dimensions)
    wanted = cast(bindparam(name, vector_literal(vector), type_=Text), typed)
    return cast(vectors.c.embedding, typed).op("<=>")(wanted)


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(f"{value:.6g}" for value in vector) + "]"


async def present(database: Database) -> bool:
    """Whether the database has the vector table (pgvector was available when it was migrated)."""
    return bool(await database.fetchval(_PRESENT))


async def pending(database: Database, model: str, after: str, limit: int) -> list[Pending]:
    """Up to ``limit`` descriptions after id ``after`` whose vectors are not those of ``model`` at their revision."""
    rows = await database.fetch(_PENDING, model=model, after=after, limit=limit)
    return [Pending(row[0], row[1], row[2]) for row in rows]


async def progress(database: Database, model: str) -> tuple[int, int]:
    """(descriptions, descriptions whose vectors are up to date)."""
    row = await database.fetchrow(_PROGRESS, model=model)
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


async def write(database: Database, model: str, embedded: Sequence[Embedded]) -> None:
    """Replace the vectors of each description (one transaction)."""

    parts = [(item, part, vector) for item in embedded for part, vector in item.parts]
    dimensions = len(parts[0][2]) if parts else 0
    flat: list[float] = []
    for _, _, vector in parts:
        if len(vector) != dimensions:
            raise ValueError("the vectors of one write differ in their dimensions")
        flat.extend(vector)
    async with database.transaction() as tx:
        await tx.execute(_DELETE, ids=[item.thing_id for item in embedded])
        await tx.execute(
            _INSERT,
            model=model,
            ids=[item.thing_id for item, _, _ in parts],
            parts=[part for _, part, _ in parts],
            revisions=[item.revision for item, _, _ in parts],
            embeddings=flat,
            dimensions=dimensions,
        )


async def index_present(database: Database) -> bool:
    """Whether the HNSW index of the vectors exists (the bulk path drops it while it writes)."""
    return bool(await database.fetchval(_INDEX_PRESENT))


async def drop_index(database: Database) -> bool:
    """Drop the HNSW index before a bulk fill: each vector written into a large graph costs a search of it, while
    building the graph once the vectors are there costs a fraction of that. Searches meanwhile scan (exact). The
    drop waits for running searches at most ``DROP_WAIT``, so that the searches queued behind it do not wait long;
    whether it was dropped (if not, the fill writes into the index)."""
    try:
        async with database.transaction() as tx:
            await tx.execute(text(f"SET LOCAL lock_timeout = '{DROP_WAIT}'"))
            await tx.execute(text(f"DROP INDEX IF EXISTS {INDEX}"))
    except asyncpg.LockNotAvailableError:
        return False
    return True


async def build_index(database: Database) -> bool:
    """Build the HNSW index if it is missing (after a bulk fill, or one a stopped process left dropped); whether
    it was built. Processes that would build it at once take turns (a transaction lock): the later ones find it."""
    if await index_present(database):
        return False
    async with database.transaction() as tx:
        await tx.execute(_INDEX_LOCK)
        if await tx.fetchval(_INDEX_PRESENT):
            return False
        await tx.execute(text(f"SET LOCAL maintenance_work_mem = '{INDEX_BUILD_MEMORY}'"))
        await tx.maintain(INDEX_DDL, INDEX_BUILD_SECONDS)
    return True


def nearest_query(
    filters: Filters,
    versions: list[str] | None,
    vector: Sequence[float],
    dimensions: int,
    model: str,
    candidates: int,
    also: Sequence[float] | None = None,
) -> Any:
    """The descriptions whose parts lie nearest ``vector`` among the ``candidates`` nearest parts, that ``filters``
    accept (tenant, liveness, kind, vendor...): each with its best similarity and its parts, the nearest first; and,
    given ``also``, the best similarity of those parts to it (computed for the nearest parts only)."""
    distance = _distance(vector, dimensions)
    second = distance if also is None else _distance(also, dimensions, "also")
    near = (
        select(vectors.c.thing_id, vectors.c.part, distance.label("distance"), second.label("also_distance"))
        .where(
            vectors.c.model == model,
            func.vector_dims(vectors.c.embedding) == int(dimensions),
        )
        .order_by(distance)
        .limit(candidates)
        .subquery("near")
    )
    similarity = (1 - near.c.distance).cast(Float)
    best = func.max(similarity)
    return (
        select(
            thing_summaries.c.thing_id,
            thing_summaries.c.summary,
            descriptions.c.modified,
            descriptions.c.expires,
            best.label("similarity"),
            func.max((1 - near.c.also_distance).cast(Float)).label("also"),
            func.array_agg(near.c.part).label("parts"),
            func.array_agg(similarity).label("similarities"),
        )
        .select_from(
            near.join(thing_summaries, thing_summaries.c.thing_id == near.c.thing_id).join(
                descriptions, descriptions.c.id == near.c.thing_id
            )
        )
        .where(*filter_conditions(dataclasses.replace(filters, text=None), versions))
        .group_by(thing_summaries.c.thing_id, descriptions.c.id)
        .order_by(best.desc(), thing_summaries.c.thing_id)
    )


async def nearest(
    executor: Executor,
    filters: Filters,
    versions: list[str] | None,
    vector: Sequence[float],
    *,
    dimensions: int,
    model: str,
    candidates: int,
    also: Sequence[float] | None = None,
) -> list[Near]:
    rows = await executor.fetch(nearest_query(filters, versions, vector, dimensions, model, candidates, also))
    found = []
    for row in rows:
        parts = sorted(zip(row["parts"], row["similarities"], strict=True), key=lambda item: -item[1])
        numbered = [(int(part), float(similarity)) for part, similarity in parts]
        second = float(row["also"]) if also is not None else None
        found.append(
            Near(
                row["thing_id"],
                float(row["similarity"]),
                numbered,
                row["summary"],
                row["modified"],
                row["expires"],
                second,
            )
        )
    return found


def similarities_query(thing_ids: Sequence[str], vector: Sequence[float], dimensions: int, model: str) -> Any:
    """The similarity of every part of ``thing_ids`` to ``vector``."""
    similarity = (1 - _distance(vector, dimensions)).cast(Float)
    return select(vectors.c.thing_id, vectors.c.part, similarity.label("similarity")).where(
        vectors.c.thing_id.in_(list(thing_ids)),
        vectors.c.model == model,
        func.vector_dims(vectors.c.embedding) == int(dimensions),
    )


async def similarities(
    executor: Executor, thing_ids: Sequence[str], vector: Sequence[float], *, dimensions: int, model: str
) -> dict[str, list[tuple[int, float]]]:
    """(part, similarity) of the parts of each of ``thing_ids`` that has vectors, the best first."""
    if not thing_ids:
        return {}
    found: dict[str, list[tuple[int, float]]] = {}
    for row in await executor.fetch(similarities_query(thing_ids, vector, dimensions, model)):
        found.setdefault(row["thing_id"], []).append((int(row["part"]), float(row["similarity"])))
    return {thing_id: sorted(parts, key=lambda item: -item[1]) for thing_id, parts in found.items()}


__all__ = [
    "DESCRIPTION_PART",
    "INDEX",
    "INDEX_DDL",
    "Embedded",
    "Near",
    "Pending",
    "build_index",
    "drop_index",
    "index_present",
    "nearest",
    "pending",
    "present",
    "progress",
    "similarities",
    "write",
]
