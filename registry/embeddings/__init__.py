"""Vectors of descriptions and needs for natural-language search: the providers behind one interface.

- :mod:`registry.embeddings.wordllama`: WordLlama's static embeddings (256 dimensions), shipped in its wheel and
  loaded from the package directory, never downloaded; the default.
- :mod:`registry.embeddings.openai`: any OpenAI-compatible ``/v1/embeddings`` endpoint (Ollama, vLLM, TEI, OpenAI).

Each provider names its model (``identity``): vectors of another model are computed again, by the job that keeps
the vectors in step with the catalogue (:mod:`registry.embeddings.indexer`).
"""

from registry.embeddings.provider import EmbeddingError, Embeddings, provider_of

__all__ = ["EmbeddingError", "Embeddings", "provider_of"]
