"""A need in plain words answered: full-text and vector retrieval fused into one score, with the capabilities that
match and the constraints the words state.

Retrieval (``mode``): ``lexical`` (full text, any word: registry/discovery/text.py), ``semantic`` (the cosine
similarity of the need's vector, widened by what the products nearest it are known for (registry/discovery/
expansion.py), to the vectors of each description and of each of its capabilities) or ``hybrid`` (both; the default
where vectors are available). Each retrieval brings its best candidates; every candidate is then scored on both, so
that a description found by one is not scored 0 by the other. The widened vector's similarities are shifted so that
the best of them equals the best similarity of the need's own vector to the same parts: the ranking is the widened
vector's, the scale the need's.

The score (0..1, comparable across needs): ``SEMANTIC_WEIGHT`` of the similarity scaled from ``SIMILARITY_FLOOR``
(0) to ``SIMILARITY_CEILING`` (1), plus the rest of the full-text rank scaled to ``LEXICAL_CEILING``; a vendor the need
names adds ``VENDOR_BOOST``, a version in the range it names adds ``VERSION_BOOST`` (one outside it takes as much
away). ``match`` is ``strong`` from ``STRONG`` up, else ``weak``: a caller can tell that nothing fits when the first
hit is weak. The constants are tuned on the development split of bench/nl_eval (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from typing import Any

import msgspec

from registry.descriptions.summary import name_words
from registry.discovery.constraints import Constraints, read_constraints
from registry.discovery.expansion import NeedExpansion
from registry.discovery.text import PREFIX_FROM, any_words_query, words
from registry.embeddings.indexer import VectorIndexer
from registry.embeddings.provider import EmbeddingError, Embeddings
from registry.store import vectors
from registry.store.catalog import CatalogStore, Filters
from registry.store.database import Transaction
from registry.wire import CapabilityBrief, MatchedCapability, SearchItem, Vendor

LEXICAL = "lexical"
SEMANTIC = "semantic"
HYBRID = "hybrid"
MODES = (LEXICAL, SEMANTIC, HYBRID)

#: Candidates of the full-text retrieval, and parts (descriptions and capabilities) of the vector retrieval.
LEXICAL_CANDIDATES = 50
VECTOR_PARTS = 200
SEMANTIC_WEIGHT = 0.9
SIMILARITY_FLOOR = 0.0
SIMILARITY_CEILING = 0.5
LEXICAL_CEILING = 0.8
VENDOR_BOOST = 0.1
VERSION_BOOST = 0.05
STRONG = 0.5
#: Capabilities listed as matched: those within this similarity of the best one, at most MAX_MATCHED.
MATCHED_WITHIN = 0.05
MAX_MATCHED = 3


#: What the vector retrieval answers: the vector searched with, the descriptions nearest it, why there is no vector
#: (or None), and the shift of the similarities.
Nearest = tuple[list[float] | None, list[vectors.Near], str | None, float]


@dataclasses.dataclass(slots=True)
class Candidate:
    thing_id: str
    summary: dict[str, Any]
    modified: dt.datetime
    expires: dt.datetime | None
    lexical: float = 0.0
    #: (part, similarity), the best first (part -1: the description itself).
    parts: list[tuple[int, float]] = dataclasses.field(default_factory=list)
    #: Taken from every similarity of ``parts`` (the shift of a widened need's similarities, see above).
    shift: float = 0.0

    @property
    def similarity(self) -> float | None:
        return self.parts[0][1] - self.shift if self.parts else None


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    items: list[SearchItem]
    retrieval: str
    note: str | None


def _scaled(value: float, floor: float, ceiling: float) -> float:
    return min(1.0, max(0.0, (value - floor) / (ceiling - floor)))


def score(candidate: Candidate, retrieval: str, constraints: Constraints) -> float:
    """The candidate's score, 0..1 (see the module's docstring)."""
    lexical = _scaled(candidate.lexical, 0.0, LEXICAL_CEILING)
    similarity = candidate.similarity
    semantic = 0.0 if similarity is None else _scaled(similarity, SIMILARITY_FLOOR, SIMILARITY_CEILING)
    base = {LEXICAL: lexical, SEMANTIC: semantic}.get(
        retrieval, SEMANTIC_WEIGHT * semantic + (1 - SEMANTIC_WEIGHT) * lexical
    )
    summary = candidate.summary
    names = [str(summary.get("title") or "")] + [str(item.get("id") or "") for item in summary.get("capabilities", [])]
    if constraints.vendor_matches((summary.get("vendor") or {}).get("name"), names):
        base += VENDOR_BOOST
    in_range = constraints.version_matches(summary.get("version"))
    if in_range is not None:
        base += VERSION_BOOST if in_range else -VERSION_BOOST
    return round(min(1.0, max(0.0, base)), 4)


def matched(candidate: Candidate, need: str) -> list[MatchedCapability]:
    """The capabilities that match the need: by vector, those nearest it; else those sharing a word with it."""
    capabilities = candidate.summary.get("capabilities", [])
    by_vector = [
        (part, similarity - candidate.shift) for part, similarity in candidate.parts if 0 <= part < len(capabilities)
    ]
    if by_vector:
        best = by_vector[0][1]
        chosen = [(part, similarity) for part, similarity in by_vector if similarity >= best - MATCHED_WITHIN]
        return [_matched(capabilities[part], round(similarity, 4)) for part, similarity in chosen[:MAX_MATCHED]]
    wanted = set(words(need))
    by_words = [item for item in capabilities if wanted & _words_of(item)]
    return [_matched(item, None) for item in by_words[:MAX_MATCHED]]


def _words_of(capability: dict[str, Any]) -> set[str]:
    """The words of a capability's name and description, in lower case."""
    texts = (capability.get("name"), capability.get("description"))
    return {word.lower() for text in texts for word in name_words(text or "")}


def _matched(capability: dict[str, Any], similarity: float | None) -> MatchedCapability:
    return MatchedCapability(
        name=capability["name"], source=capability["source"], id=capability.get("id"), similarity=similarity
    )


def _item(candidate: Candidate, value: float, found: list[MatchedCapability]) -> SearchItem:
    summary = candidate.summary
    return SearchItem(
        id=candidate.thing_id,
        kind=summary["kind"],
        modified=candidate.modified,
        title=summary.get("title"),
        description=summary.get("description"),
        vendor=msgspec.convert(summary["vendor"], Vendor) if summary.get("vendor") else None,
        version=summary.get("version"),
        types=summary.get("types", []),
        capabilities=[
            CapabilityBrief(name=item["name"], source=item["source"], id=item.get("id"), version=item.get("version"))
            for item in summary.get("capabilities", [])
        ],
        expires=candidate.expires,
        score=value,
        convention=summary.get("convention"),
        match="strong" if value >= STRONG else "weak",
        matched=found,
    )


class NeedSearch:
    def __init__(self, catalog: CatalogStore, index: VectorIndexer | None) -> None:
        self.catalog = catalog
        self.index = index
        provider = index.provider if index is not None else None
        self.expansion = NeedExpansion(provider) if provider is not None else None

    async def warm(self) -> None:
        """What the first need would otherwise wait for, done in advance (the purpose lines' vectors)."""
        if self.expansion is not None and self.index is not None and self.index.serving:
            await self.expansion.warm()

    def retrieval(self, mode: str | None) -> tuple[str, str | None]:
        """The retrieval that answers ``mode`` (default hybrid), and why it is lexical when vectors cannot answer."""
        wanted = mode or HYBRID
        if wanted == LEXICAL:
            return LEXICAL, None
        if self.index is None or not self.index.serving:
            reason = "vectors are not available" if self.index is None else self.index.reason
            return LEXICAL, f"answered by full-text search alone: {reason}"
        return wanted, None

    async def search(self, filters: Filters, mode: str | None, limit: int) -> Answer:
        """The two retrievals run side by side (each on its own connection); the candidates of the full text that
        the vectors did not bring get their similarities in one more statement."""
        need = filters.text or ""
        constraints = read_constraints(need)
        retrieval, note = self.retrieval(mode)
        text = constraints.text or need
        lexical_filters = dataclasses.replace(filters, text=text, text_query=any_words_query(text))
        lexical, (vector, near, failure, shift) = await asyncio.gather(
            self._lexical(lexical_filters) if retrieval != SEMANTIC else _nothing(),
            self._near(filters, text) if retrieval != LEXICAL else _no_vector(),
        )
        if failure is not None:  # the embeddings endpoint failed: the need is answered by its words
            retrieval, note = LEXICAL, f"answered by full-text search alone: {failure}"
            lexical = lexical or await self._lexical(lexical_filters)
        candidates = _merged(lexical, near, shift)
        await self._complete(candidates, vector)
        scored = sorted(
            ((score(candidate, retrieval, constraints), candidate) for candidate in candidates.values()),
            key=lambda pair: (-pair[0], pair[1].thing_id),
        )
        items = [_item(candidate, value, matched(candidate, text)) for value, candidate in scored[:limit]]
        return Answer(items, retrieval, note)

    async def _complete(self, candidates: dict[str, Candidate], vector: list[float] | None) -> None:
        """The similarities of the candidates that only the full text brought (none without a vector)."""
        unscored = [thing_id for thing_id, candidate in candidates.items() if not candidate.parts]
        if vector is None or not unscored:
            return
        for thing_id, parts in (await self._similarities(unscored, vector)).items():
            candidates[thing_id].parts = parts

    async def _lexical(self, filters: Filters) -> list[Candidate]:
        rows = await self.catalog.need_matches(filters, words(filters.text or ""), PREFIX_FROM, LEXICAL_CANDIDATES)
        return [
            Candidate(row["thing_id"], row["summary"], row["modified"], row["expires"], lexical=float(row["sort_key"]))
            for row in rows
        ]

    def _shape(self) -> tuple[Embeddings, int, str]:
        provider = self.index.provider if self.index is not None else None
        assert provider is not None
        assert self.index is not None
        return provider, provider.dimensions, self.index.model

    async def _near(self, filters: Filters, text: str) -> Nearest:
        """The need's vector (widened), the descriptions nearest it that ``filters`` accept and the shift of their
        similarities; or why there is no vector."""
        provider, dimensions, model = self._shape()
        try:
            (need,) = await provider.embed([text])
            vector = need if self.expansion is None else await self.expansion.widen(need)
        except EmbeddingError as error:
            return None, [], str(error), 0.0
        also = None if vector is need else need

        async def read(tx: Transaction, narrowed: Filters, versions: list[str] | None) -> list[vectors.Near]:
            return await vectors.nearest(
                tx, narrowed, versions, vector, dimensions=dimensions, model=model, candidates=VECTOR_PARTS, also=also
            )

        near = await self.catalog.filtered_read(filters, read)
        return vector, near, None, _shift(near)

    async def _similarities(self, thing_ids: list[str], vector: list[float]) -> dict[str, list[tuple[int, float]]]:
        _, dimensions, model = self._shape()

        async def read(tx: Transaction, narrowed: Filters, versions: list[str] | None) -> dict[str, Any]:
            return await vectors.similarities(tx, thing_ids, vector, dimensions=dimensions, model=model)

        return await self.catalog.filtered_read(Filters(), read)


def _merged(lexical: list[Candidate], near: list[vectors.Near], shift: float) -> dict[str, Candidate]:
    """The candidates of both retrievals by id: the full text's, with the parts the vectors found for them, and the
    vectors' others; every one with the need's ``shift``."""
    candidates = {candidate.thing_id: candidate for candidate in lexical}
    for found in near:
        candidate = candidates.setdefault(
            found.thing_id, Candidate(found.thing_id, found.summary, found.modified, found.expires)
        )
        candidate.parts = found.parts
    for candidate in candidates.values():
        candidate.shift = shift
    return candidates


def _shift(near: list[vectors.Near]) -> float:
    """How far the best similarity to the widened vector lies above the best to the need's own, over the parts
    retrieved (0 when the need was not widened)."""
    own = [found.also for found in near if found.also is not None]
    if not own:
        return 0.0
    return max(found.similarity for found in near) - max(own)


async def _nothing() -> list[Candidate]:
    return []


async def _no_vector() -> Nearest:
    return None, [], None, 0.0


__all__ = ["HYBRID", "LEXICAL", "MODES", "SEMANTIC", "Answer", "NeedSearch", "score"]
