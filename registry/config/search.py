"""Settings of the group "Reads and search": pages, the response cache, embeddings, JSONPath limits."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from registry.config.fields import SEARCH, setting
from registry.config.parsers import at_least_one, choice, non_negative


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """The fields of :class:`registry.config.Settings` in the group ``SEARCH``; never made on its own."""

    # No slots of its own: Settings, which gathers the groups, has a slot per field (and no __dict__).
    __slots__ = ()

    max_page_size: int = setting(SEARCH, 1000, "Largest page a `limit` can ask for.")
    response_cache_entries: int = setting(
        SEARCH,
        10_000,
        "Descriptions the response cache of `GET /things/{id}` keeps per server process (`0`: no cache); evicted by "
        "the change feed (docs/performance.md).",
    )
    response_cache_bytes: int = setting(
        SEARCH,
        64 * 1024 * 1024,
        "Bytes of served JSON that cache keeps at most; a description larger than an eighth of it is not kept.",
    )
    search_timeout: float = setting(
        SEARCH,
        5.0,
        "Seconds PostgreSQL lets each statement of `/api/v1/search`, `/api/v1/facets` and `/api/v1/resolve` run (503 "
        "after).",
    )
    embeddings: str = setting(
        SEARCH,
        "wordllama",
        "Who computes the vectors of natural-language search (docs/discovery.md): `wordllama` (the model its wheel "
        "ships, offline), `openai` (an OpenAI-compatible `/v1/embeddings` endpoint: Ollama, vLLM, TEI, OpenAI) or "
        "`off` (lexical only). Needs pgvector in the database; without it needs are answered lexically and `/readyz` "
        "says so.",
    )
    embeddings_url: str = setting(
        SEARCH,
        "",
        "Base URL of the embeddings endpoint (`http://127.0.0.1:11434/v1`), for `REGISTRY_EMBEDDINGS=openai`.",
    )
    embeddings_model: str = setting(
        SEARCH, "", "Model name sent to the embeddings endpoint; a change of model re-embeds every description."
    )
    embeddings_dimensions: int = setting(SEARCH, 0, "Dimension of the endpoint's vectors (openai).")
    embeddings_api_key: str = setting(SEARCH, "", "Bearer key for the embeddings endpoint (also as `…_FILE`).")
    embeddings_timeout: float = setting(SEARCH, 10.0, "Seconds one request to the embeddings endpoint may take.")
    jsonpath_timeout: float = setting(
        SEARCH,
        10.0,
        "Seconds a JSONPath search may run before it is refused (400: narrow the query); kept inside the evaluation, "
        "so a search ends shortly after it. A search waits as long for a thread (503 with `Retry-After` after).",
    )
    jsonpath_concurrency: int = setting(
        SEARCH,
        2,
        "JSONPath searches evaluated at once, on threads of their own (writes decode, validate and project on others).",
    )
    jsonpath_client_concurrency: int = setting(
        SEARCH,
        2,
        "JSONPath searches one client (its principal, else its address) may have running or waiting; more get 429 "
        "with `Retry-After` (0 = no per-client limit).",
    )
    jsonpath_max_results: int = setting(SEARCH, 10_000, "Most values a JSONPath search may return (400 above).")
    jsonpath_max_bytes: int = setting(
        SEARCH,
        16 * 1024 * 1024,
        "Largest JSONPath answer in bytes, and most bytes of descriptions a query referring to the root inside a "
        "filter may hold (400 above).",
    )


#: How each field's ``REGISTRY_*`` variable is read.
PARSERS: dict[str, Callable[[str], Any]] = {
    "max_page_size": non_negative(int),
    "response_cache_entries": non_negative(int),
    "response_cache_bytes": non_negative(int),
    "search_timeout": non_negative(float),
    "embeddings": choice("wordllama", "openai", "off"),
    "embeddings_url": str,
    "embeddings_model": str,
    "embeddings_dimensions": non_negative(int),
    "embeddings_api_key": str,
    "embeddings_timeout": non_negative(float),
    "jsonpath_timeout": non_negative(float),
    "jsonpath_concurrency": at_least_one,
    "jsonpath_client_concurrency": non_negative(int),
    "jsonpath_max_results": non_negative(int),
    "jsonpath_max_bytes": non_negative(int),
}
