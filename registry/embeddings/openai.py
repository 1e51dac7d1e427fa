"""Vectors from an OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, vLLM, TEI, OpenAI)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import httpx

from registry.embeddings.provider import EmbeddingError

#: Texts sent per request.
BATCH = 64


class OpenAIEmbeddings:
    def __init__(
        self,
        url: str,
        model: str,
        dimensions: int,
        *,
        api_key: str = "",
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.identity = f"openai:{url.rstrip('/')}:{model}:{dimensions}"
        self.dimensions = dimensions
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.AsyncClient(
            base_url=url.rstrip("/") + "/", headers=headers, timeout=timeout, transport=transport
        )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            vectors.extend(await self._batch(list(texts[start : start + BATCH])))
        return vectors

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        try:
            response = await self.client.post("embeddings", json={"model": self.model, "input": texts})
            response.raise_for_status()
            data = response.json()["data"]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as error:
            raise EmbeddingError(f"the embeddings endpoint failed: {error}") from error
        ordered = sorted(data, key=lambda item: item.get("index", 0))
        return [self._unit(item.get("embedding")) for item in ordered]

    def _unit(self, vector: Any) -> list[float]:
        if not isinstance(vector, list) or len(vector) != self.dimensions:
            size = len(vector) if isinstance(vector, list) else "no"
            raise EmbeddingError(f"the endpoint answered a vector of {size} dimensions, not {self.dimensions}")
        norm = math.sqrt(sum(float(value) ** 2 for value in vector)) or 1.0
        return [float(value) / norm for value in vector]

    async def close(self) -> None:
        await self.client.aclose()


__all__ = ["OpenAIEmbeddings"]
