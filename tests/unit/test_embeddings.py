"""Embedding providers: WordLlama's shipped model, loaded without touching the network; an OpenAI-compatible
endpoint's vectors, normalised and checked."""

from __future__ import annotations

import json
import math
import socket
from typing import Any

import httpx
import pytest

from registry.config import ConfigError, Settings
from registry.embeddings import EmbeddingError, provider_of
from registry.embeddings import wordllama as shipped
from registry.embeddings.openai import OpenAIEmbeddings


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_wordllama_loads_its_shipped_model_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"the network was touched: {args}")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket, "create_connection", refused)
    monkeypatch.setattr(shipped, "_model", None)  # loaded in this test, not by an earlier one
    provider = provider_of(Settings())
    assert provider is not None
    assert provider.identity == "wordllama:l2_supercat:256"
    need, weather, invoices = await provider.embed(
        ["tomorrow's weather in Berlin", "Weather forecasts for any city", "Extract data from scanned invoices"]
    )
    assert len(need) == provider.dimensions == 256
    assert math.isclose(math.sqrt(sum(value * value for value in need)), 1.0, rel_tol=1e-4)
    assert cosine(need, weather) > cosine(need, invoices)


async def test_the_model_is_loaded_once_per_process() -> None:
    assert shipped.load_model() is shipped.load_model()


def test_embeddings_off_and_openai_settings() -> None:
    assert provider_of(Settings(embeddings="off")) is None
    with pytest.raises(ConfigError, match="REGISTRY_EMBEDDINGS_URL"):
        Settings(embeddings="openai")
    assert Settings.from_env({"REGISTRY_EMBEDDINGS": "OFF"}).embeddings == "off"


async def test_an_openai_compatible_endpoint_answers_unit_vectors_in_order() -> None:
    asked: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        asked.append({"url": str(request.url), "auth": request.headers.get("authorization"), **body})
        data = [{"index": i, "embedding": [3.0 * (i + 1), 4.0 * (i + 1)]} for i in range(len(body["input"]))]
        return httpx.Response(200, json={"data": list(reversed(data))})

    provider = OpenAIEmbeddings("http://embedder/v1", "tiny", 2, api_key="k", transport=httpx.MockTransport(answer))
    vectors = await provider.embed(["a", "b"])
    await provider.close()
    assert vectors == [[0.6, 0.8], [0.6, 0.8]]
    assert asked == [{"url": "http://embedder/v1/embeddings", "auth": "Bearer k", "model": "tiny", "input": ["a", "b"]}]
    assert provider.identity == "openai:http://embedder/v1:tiny:2"


async def test_a_vector_of_another_dimension_or_a_failing_endpoint_is_an_embedding_error() -> None:
    wrong = httpx.MockTransport(lambda request: httpx.Response(200, json={"data": [{"index": 0, "embedding": [1]}]}))
    failing = httpx.MockTransport(lambda request: httpx.Response(500))
    for transport in (wrong, failing):
        provider = OpenAIEmbeddings("http://embedder/v1", "tiny", 2, transport=transport)
        with pytest.raises(EmbeddingError):
            await provider.embed(["a"])
        await provider.close()


def test_a_large_backfill_fills_in_bulk_a_small_one_keeps_the_index() -> None:
    from registry.embeddings.indexer import BULK_FROM, bulk

    assert bulk(BULK_FROM, 0)  # the first fill of a large directory
    assert bulk(2 * BULK_FROM, BULK_FROM)  # a model change half way through
    assert not bulk(BULK_FROM - 1, 0)  # small: the index is kept
    assert not bulk(4 * BULK_FROM, 3 * BULK_FROM)  # most are embedded: writing into the index costs less than a build
    assert not bulk(0, 0)


def test_the_bulk_path_builds_the_index_the_migration_creates() -> None:
    from pathlib import Path

    from registry.store.vectors import INDEX_DDL

    migration = Path(__file__).parents[2] / "migrations" / "versions" / "0017_description_vectors.py"
    assert " ".join(INDEX_DDL.split()) in " ".join(migration.read_text().replace('"\n', "").replace('"', "").split())
