"""A need's vector widened by the gazetteer's purpose lines nearest it, and the shift that keeps the score's scale."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

import numpy as np
import pytest

from registry.descriptions.gazetteer import listed_purposes
from registry.discovery import expansion, needs
from registry.discovery.expansion import NeedExpansion, widened
from registry.embeddings.provider import EmbeddingError
from registry.embeddings.wordllama import WordLlamaEmbeddings
from registry.store.vectors import Near


def unit(*values: float) -> list[float]:
    norm = math.sqrt(sum(value * value for value in values))
    return [value / norm for value in values]


def test_a_need_moves_towards_the_mean_of_its_nearest_purpose_lines_and_stays_unit_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(expansion, "PRODUCTS", 2)
    monkeypatch.setattr(expansion, "WEIGHT", 1.0)
    purposes = np.asarray([unit(1, 1, 0), unit(1, 0, 1), unit(0, 0, 1), unit(-1, 0, 0)], dtype=np.float32)
    need = unit(1, 0, 0)
    moved = widened(need, purposes)
    assert math.isclose(sum(value * value for value in moved), 1.0, rel_tol=1e-5)
    # the two nearest lines (1,1,0) and (1,0,1) pull it towards y and z alike; the far ones do not count
    expected = np.asarray(need) + (purposes[0] + purposes[1]) / 2
    assert np.allclose(moved, expected / np.linalg.norm(expected), atol=1e-6)
    assert widened(need, np.zeros((0, 3), dtype=np.float32)) == pytest.approx(need)


class Provider:
    dimensions = 3
    identity = "test:three:3"

    def __init__(self, expands: bool) -> None:
        if expands:
            self.expands_needs = True
        self.calls: list[int] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return [unit(1, float(index % 3), 1) for index, _ in enumerate(texts)]

    async def close(self) -> None:
        return None


async def test_the_purpose_lines_are_embedded_once_in_batches_by_a_provider_that_widens() -> None:
    provider = Provider(expands=True)
    expanding = NeedExpansion(provider)
    assert expanding.enabled
    first = await expanding.widen(unit(1, 0, 0))
    second = await expanding.widen(unit(0, 1, 0))
    assert sum(provider.calls) == len(listed_purposes()) > 1000
    assert max(provider.calls) <= expansion.BATCH
    assert first != unit(1, 0, 0)
    assert second != unit(0, 1, 0)


async def test_warming_embeds_the_purpose_lines_before_any_need_and_survives_a_failing_provider() -> None:
    provider = Provider(expands=True)
    expanding = NeedExpansion(provider)
    await expanding.warm()
    assert sum(provider.calls) == len(listed_purposes())
    await expanding.widen(unit(1, 0, 0))
    assert sum(provider.calls) == len(listed_purposes())  # the need found them embedded

    class Failing(Provider):
        async def embed(self, texts: Sequence[str]) -> list[list[float]]:
            raise EmbeddingError("the embeddings endpoint is down")

    failing = NeedExpansion(Failing(expands=True))
    await failing.warm()  # logged, not raised: the first need tries again
    with pytest.raises(EmbeddingError):
        await failing.widen(unit(1, 0, 0))


async def test_a_provider_that_does_not_say_it_widens_needs_leaves_them_as_they_are() -> None:
    provider = Provider(expands=False)
    expanding = NeedExpansion(provider)
    need = unit(1, 2, 3)
    assert await expanding.widen(need) is need
    assert provider.calls == []
    assert NeedExpansion(WordLlamaEmbeddings()).enabled  # the shipped model's constants are tuned for it


def near(thing_id: str, similarity: float, own: float | None) -> Near:
    return Near(thing_id, similarity, [(-1, similarity)], {"kind": "tool"}, dt.datetime.now(dt.UTC), None, own)


def test_the_shift_brings_the_best_widened_similarity_down_to_the_needs_own_best() -> None:
    found = [near("a", 0.62, 0.41), near("b", 0.55, 0.47)]
    assert needs._shift(found) == pytest.approx(0.62 - 0.47)
    assert needs._shift([near("a", 0.62, None)]) == 0.0
    assert needs._shift([]) == 0.0


def test_a_candidates_similarity_and_matched_capabilities_are_shifted_alike() -> None:
    summary = {"kind": "agent", "capabilities": [{"name": "Plan", "source": "a2a", "id": "plan"}]}
    candidate = needs.Candidate("urn:t:a", summary, dt.datetime.now(dt.UTC), None, parts=[(0, 0.6), (-1, 0.5)])
    candidate.shift = 0.2
    assert candidate.similarity == pytest.approx(0.4)
    (matched,) = needs.matched(candidate, "plan my week")
    assert matched.similarity == pytest.approx(0.4)
