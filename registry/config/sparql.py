"""Settings of the group "SPARQL": query limits, the on-disk index and its worker, an external store."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from registry.config.fields import SPARQL, setting
from registry.config.parsers import non_negative, one_of, parse_list, parse_optional_path


@dataclasses.dataclass(frozen=True)
class SparqlSettings:
    """The fields of :class:`registry.config.Settings` in the group ``SPARQL``; never made on its own."""

    # No slots of its own: Settings, which gathers the groups, has a slot per field (and no __dict__).
    __slots__ = ()

    sparql_timeout: float = setting(SPARQL, 10.0, "SPARQL query timeout, seconds.")
    sparql_max_results: int = setting(SPARQL, 10_000, "Result cap for SPARQL.")
    sparql_service_allowlist: tuple[str, ...] = setting(
        SPARQL,
        (),
        "Comma-separated SPARQL `SERVICE` endpoints allowed (empty = federation off).",
    )
    sparql_index_dir: Path | None = setting(
        SPARQL,
        None,
        "Where the on-disk SPARQL index lives (one store per database; kept across restarts).",
        shown="`sparql-index` in `REGISTRY_DATA_DIR`",
    )
    sparql_start: str = setting(
        SPARQL,
        "on-demand",
        "When the local SPARQL index's worker starts: `on-demand` at the first SPARQL query (which waits up to "
        "`REGISTRY_SPARQL_TIMEOUT` for it to build or catch up), or at start when an index is already on disk; "
        "`eager` always at start. A directory nobody queries with SPARQL runs no worker and indexes no write.",
    )
    sparql_index_defer: float = setting(
        SPARQL,
        10.0,
        "Seconds the on-disk SPARQL index may hold back a burst of writes at most: it applies them once the writes "
        "pause for 1 s, when a query needs them (a query still sees every write acknowledged before it), or after "
        "this long (0 = apply changes as they come; docs/scaling.md).",
    )
    sparql_concurrency: int = setting(
        SPARQL,
        2,
        "SPARQL queries evaluated at once (threads of the query worker), shared round-robin between clients; one "
        "client runs at most this minus one at once (1 when it is 1), so another always finds a thread "
        "(docs/search.md).",
    )
    sparql_queue: int = setting(
        SPARQL,
        64,
        "SPARQL queries waiting for their turn beyond those; more get 503 with `Retry-After`.",
    )
    sparql_client_concurrency: int = setting(
        SPARQL,
        8,
        "SPARQL queries one client (its principal, or its address when anonymous) may have in flight, running or "
        "waiting; more get 429 with `Retry-After` (0 = no per-client limit; behind a proxy every anonymous client has "
        "its address).",
    )
    sparql_memory_limit: int = setting(
        SPARQL,
        2048,
        "Address space of the SPARQL query worker, MiB (0 = unbounded); a query needing more fails with 503, the "
        "on-disk index stays.",
    )
    sparql_store_query_url: str = setting(
        SPARQL,
        "",
        "An external SPARQL 1.1 store (Oxigraph server, Fuseki, …) instead of the local index: its query endpoint "
        "(set together with `REGISTRY_SPARQL_STORE_UPDATE_URL`). One replica pushes the RDF to it, every replica "
        "answers `/search/sparql` from it; no SPARQL worker runs (docs/scaling.md).",
    )
    sparql_store_update_url: str = setting(
        SPARQL,
        "",
        "The external SPARQL store's update endpoint (set together with `REGISTRY_SPARQL_STORE_QUERY_URL`).",
    )
    sparql_store_graph_url: str = setting(
        SPARQL,
        "",
        "The store's Graph Store Protocol endpoint for its dataset (N-Quads by POST), used to load a new copy in "
        "bulk; without it, SPARQL Update.",
    )
    sparql_store_token: str = setting(SPARQL, "", "Bearer token for the external SPARQL store (also as `…_FILE`).")
    sparql_store_user: str = setting(
        SPARQL,
        "",
        "User for HTTP basic authentication to the external SPARQL store (with `REGISTRY_SPARQL_STORE_PASSWORD`).",
    )
    sparql_store_password: str = setting(
        SPARQL,
        "",
        "Password for HTTP basic authentication to the external SPARQL store (also as `…_FILE`).",
    )


#: How each field's ``REGISTRY_*`` variable is read.
PARSERS: dict[str, Callable[[str], Any]] = {
    "sparql_timeout": non_negative(float),
    "sparql_max_results": non_negative(int),
    "sparql_service_allowlist": parse_list,
    "sparql_index_dir": parse_optional_path,
    "sparql_start": one_of("on-demand", "eager"),
    "sparql_index_defer": non_negative(float),
    "sparql_concurrency": non_negative(int),
    "sparql_queue": non_negative(int),
    "sparql_client_concurrency": non_negative(int),
    "sparql_memory_limit": non_negative(int),
    "sparql_store_query_url": str,
    "sparql_store_update_url": str,
    "sparql_store_graph_url": str,
    "sparql_store_token": str,
    "sparql_store_user": str,
    "sparql_store_password": str,
}
