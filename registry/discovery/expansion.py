"""A need's vector widened by what the products nearest it are known for (the product gazetteer read the other way).

The gazetteer (registry/descriptions/gazetteer.py) gives a description that names a product what that product is
used for. A need rarely names one: "why did my last pipeline build go red" names no CI service, yet its nearest
purpose lines in the list are those of CI services ("continuous integration, builds, test pipelines"). Those lines
say the task in the words descriptions use, so the need's vector is moved towards them: the mean of the vectors of
its ``PRODUCTS`` nearest purpose lines is added with ``WEIGHT``, and the sum made unit length again. Descriptions are
then ranked by their similarity to the widened vector.

The widened vector is nearer every description that names a product, so its similarities say less of whether
anything fits; the search shifts them so that the best equals the need's own best similarity
(registry/discovery/needs.py), keeping the score's scale.

The purpose lines are embedded once per process, by the provider that embeds the need: at start, in the background
(``warm``), or by the first need if it comes before. The
constants are tuned for the shipped model (WordLlama): a provider widens needs only where it says so
(``expands_needs``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from registry.descriptions.gazetteer import listed_purposes
from registry.embeddings.provider import EmbeddingError, Embeddings

log = logging.getLogger(__name__)

#: Purpose lines whose vectors widen a need: its nearest ones.
PRODUCTS = 5
#: Weight of their mean vector against the need's (unit length) vector.
WEIGHT = 0.75
#: Purpose lines embedded per call of the provider.
BATCH = 256

Matrix = npt.NDArray[np.float32]


def widened(vector: Sequence[float], purposes: Matrix) -> list[float]:
    """``vector`` plus ``WEIGHT`` times the mean of its ``PRODUCTS`` nearest rows of ``purposes``, unit length."""
    need = np.asarray(vector, dtype=np.float32)
    if len(purposes) <= PRODUCTS:
        nearest = np.arange(len(purposes))
    else:
        nearest = np.argpartition(-(purposes @ need), PRODUCTS)[:PRODUCTS]
    if not len(nearest):
        return [float(value) for value in vector]
    moved = need + WEIGHT * purposes[nearest].mean(axis=0)
    norm = float(np.linalg.norm(moved))
    result: list[float] = (moved / norm if norm else need).astype(np.float64).tolist()
    return result


class NeedExpansion:
    """The purpose lines' vectors of one provider (computed on first use) and the widening of needs with them."""

    def __init__(self, provider: Embeddings) -> None:
        self.provider = provider
        self.enabled = bool(getattr(provider, "expands_needs", False))
        self._purposes: Matrix | None = None
        self._lock = asyncio.Lock()

    async def purposes(self) -> Matrix:
        """The vectors of the purpose lines (embedded on the first call; an EmbeddingError propagates)."""
        if self._purposes is None:
            async with self._lock:
                if self._purposes is None:
                    texts = list(listed_purposes())
                    rows: list[list[float]] = []
                    for start in range(0, len(texts), BATCH):
                        rows += await self.provider.embed(texts[start : start + BATCH])
                    self._purposes = np.asarray(rows, dtype=np.float32).reshape(len(rows), self.provider.dimensions)
        return self._purposes

    async def warm(self) -> None:
        """Embed the purpose lines now, so that the first need does not wait for them (a failure is logged; the first
        need tries again)."""
        if not self.enabled:
            return
        try:
            await self.purposes()
        except EmbeddingError as error:
            log.warning("the purpose lines that widen needs are not embedded yet: %s", error)

    async def widen(self, vector: list[float]) -> list[float]:
        """The need's vector widened (see the module's docstring), or as it is where the provider does not widen."""
        if not self.enabled:
            return vector
        return widened(vector, await self.purposes())


__all__ = ["PRODUCTS", "WEIGHT", "NeedExpansion", "widened"]
