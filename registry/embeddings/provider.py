"""The interface of an embedding provider, and the provider the settings choose."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from registry.config import Settings


class EmbeddingError(Exception):
    """The provider could not compute vectors (a model that does not load, an endpoint that fails)."""


class Embeddings(Protocol):
    """Computes unit-length vectors of texts, off the event loop."""

    #: The model, as stored beside each vector: a change of it has every vector computed again.
    identity: str
    dimensions: int

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector of ``dimensions`` per text, in order."""
        ...

    async def close(self) -> None: ...


def provider_of(settings: Settings) -> Embeddings | None:
    """The provider of ``REGISTRY_EMBEDDINGS`` (None: off)."""
    if settings.embeddings == "off":
        return None
    if settings.embeddings == "openai":
        from registry.embeddings.openai import OpenAIEmbeddings

        return OpenAIEmbeddings(
            settings.embeddings_url,
            settings.embeddings_model,
            settings.embeddings_dimensions,
            api_key=settings.embeddings_api_key,
            timeout=settings.embeddings_timeout,
        )
    from registry.embeddings.wordllama import WordLlamaEmbeddings

    return WordLlamaEmbeddings()


__all__ = ["EmbeddingError", "Embeddings", "provider_of"]
