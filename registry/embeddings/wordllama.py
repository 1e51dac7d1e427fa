"""WordLlama static embeddings: the model its wheel ships, loaded once per process on first use, never downloaded.

``WordLlama.load()`` looks for the shipped tokenizer in a ``tokenizer`` folder of the package while the wheel has it
in ``tokenizers``: the package directory is given as the cache directory (whose ``weights`` and ``tokenizers``
folders are those of the wheel) and downloads are disabled, so a missing file is an error, not a download.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from registry.embeddings.provider import EmbeddingError

CONFIG = "l2_supercat"
DIMENSIONS = 256

_lock = threading.Lock()
_model: Any = None


def load_model() -> Any:
    """The process's one WordLlama model (loaded on the first call; blocking)."""
    global _model
    with _lock:
        if _model is None:
            try:
                import wordllama
                from wordllama import WordLlama

                package = Path(wordllama.__file__).parent
                _model = WordLlama.load(CONFIG, cache_dir=package, dim=DIMENSIONS, disable_download=True)
            except (ImportError, OSError, ValueError) as error:
                raise EmbeddingError(f"the WordLlama model does not load: {error}") from error
        return _model


def embed_blocking(texts: Sequence[str]) -> list[list[float]]:
    """Unit-length vectors of ``texts`` (blocking: run in an executor)."""
    if not texts:
        return []
    vectors: list[list[float]] = load_model().embed(list(texts), norm=True).astype("float64").tolist()
    return vectors


class WordLlamaEmbeddings:
    identity = f"wordllama:{CONFIG}:{DIMENSIONS}"
    dimensions = DIMENSIONS
    #: Needs are widened by the gazetteer's purpose lines (registry/discovery/expansion.py), tuned for this model.
    expands_needs = True

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Computed in the default executor: loading the model and tokenising are CPU work."""
        return await asyncio.get_running_loop().run_in_executor(None, embed_blocking, list(texts))

    async def close(self) -> None:
        return None


__all__ = ["DIMENSIONS", "WordLlamaEmbeddings", "embed_blocking", "load_model"]
