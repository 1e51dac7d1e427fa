"""The HTTP side of an external SPARQL 1.1 store: SPARQL Update (changes, and the position marker with them), the
Graph Store Protocol (bulk loads: N-Quads POSTed to the dataset), the SPARQL Protocol (queries, and the marker).

The store holds, besides one named graph per description, a graph of the directory's own (``STATE_GRAPH``): which
database the copy is of (:func:`registry.store.rdf.database_identity`) and the last change position applied. It is
written in the same update request as the changes that reach that position, so data and position move together.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pyoxigraph as ox

from registry.config import Settings
from registry.errors import BadRequest, ServiceUnavailable
from registry.semantic.graphs import quads_in
from registry.sparql.query import MAX_ANSWER_BYTES, QueryTimeout, too_many

STATE_GRAPH = ox.NamedNode("urn:lmos-registry:state")
_DATABASE = ox.NamedNode("urn:lmos-registry:database")
_POSITION = ox.NamedNode("urn:lmos-registry:position")
_LAYOUT = ox.NamedNode("urn:lmos-registry:layout")
#: How the store holds descriptions. 1: as stored; 2: each graph holds only the description's statements about itself
#: (a copy of layout 1 may hold what a description said about others). A copy of another layout is rebuilt.
LAYOUT = 2
_XSD_INTEGER = ox.NamedNode("http://www.w3.org/2001/XMLSchema#integer")
_STATE_QUERY = (
    f"SELECT ?database ?position ?layout WHERE {{ GRAPH {STATE_GRAPH} {{ {STATE_GRAPH} {_DATABASE} ?database ; "
    f"{_POSITION} ?position . OPTIONAL {{ {STATE_GRAPH} {_LAYOUT} ?layout }} }} }}"
)
#: True when the store's default graph is the union of its named graphs (the state triple is only in its own graph).
_UNION_QUERY = f"ASK {{ {STATE_GRAPH} {_POSITION} ?position }}"
#: What queries ask the store for: SELECT/ASK results as JSON, graphs as N-Triples (converted to what the client
#: asked for here, as the local index does, with the same limits).
QUERY_ACCEPT = "application/sparql-results+json, application/n-triples;q=0.9"
RESULTS_TYPES = frozenset({"application/sparql-results+json", "application/json"})
GRAPH_TYPES = frozenset({"application/n-triples", "text/plain"})
#: Seconds an update or a bulk load may take (a step of the follower is up to 16 MB of RDF, or one larger description).
WRITE_TIMEOUT = 120.0
CONNECT_TIMEOUT = 5.0
#: Characters of a store's error message passed on.
_MESSAGE_CHARS = 2000


class StoreUnavailable(ServiceUnavailable):
    """The store cannot be reached, failed, or refused the directory's own request: the query may succeed later."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"Retry-After": "2"})


@dataclasses.dataclass(frozen=True, slots=True)
class StoreState:
    """What the store's copy is of: a database, up to a change position, in which ``LAYOUT`` (a copy recorded
    before layouts were is of layout 1)."""

    database: str
    position: int
    layout: int = LAYOUT


class _Binding(msgspec.Struct):
    value: str


class _Rows(msgspec.Struct):
    bindings: list[dict[str, _Binding]]


class _Results(msgspec.Struct):
    results: _Rows | None = None
    boolean: bool | None = None


def state_update(state: StoreState) -> str:
    """The SPARQL Update operations that record ``state`` (replacing the one recorded)."""
    database = ox.Literal(state.database)
    position = ox.Literal(str(state.position), datatype=_XSD_INTEGER)
    layout = ox.Literal(str(state.layout), datatype=_XSD_INTEGER)
    return (
        f"DROP SILENT GRAPH {STATE_GRAPH} ; INSERT DATA {{ GRAPH {STATE_GRAPH} {{ {STATE_GRAPH} {_DATABASE} "
        f"{database} ; {_POSITION} {position} ; {_LAYOUT} {layout} }} }}"
    )


class SparqlStore:
    def __init__(self, settings: Settings) -> None:
        self.query_url = settings.sparql_store_query_url
        self.update_url = settings.sparql_store_update_url
        self.graph_url = settings.sparql_store_graph_url
        self.timeout = settings.sparql_timeout
        headers = {"Authorization": f"Bearer {settings.sparql_store_token}"} if settings.sparql_store_token else {}
        auth = (
            httpx.BasicAuth(settings.sparql_store_user, settings.sparql_store_password)
            if settings.sparql_store_user
            else None
        )
        self._client = httpx.AsyncClient(
            headers=headers, auth=auth, timeout=httpx.Timeout(WRITE_TIMEOUT, connect=CONNECT_TIMEOUT)
        )
        #: The last failure to reach the store (None after a success): for readiness.
        self.failure: str | None = None

    async def close(self) -> None:
        await self._client.aclose()

    async def update(self, operations: str) -> None:
        """One SPARQL Update request (atomic in the stores named in docs/scaling.md)."""
        await self._write(self.update_url, operations.encode(), "application/sparql-update")

    async def load(self, graphs: list[tuple[ox.NamedNode, str]]) -> None:
        """Add graphs (name, N-Triples with blank node labels apart): POSTed as N-Quads to the dataset with the
        Graph Store Protocol, or one SPARQL Update ``INSERT DATA`` without a GSP endpoint."""
        if self.graph_url:
            nquads = "".join(quads_in(graph, ntriples) for graph, ntriples in graphs)
            await self._write(self.graph_url, nquads.encode(), "application/n-quads")
        elif graphs:
            await self.update(
                "INSERT DATA { " + " ".join(f"GRAPH {graph} {{ {ntriples} }}" for graph, ntriples in graphs) + " }"
            )

    async def state(self) -> StoreState | None:
        """The recorded state (None when the store holds none)."""
        results = msgspec.json.decode(await self._select(_STATE_QUERY), type=_Results)
        for row in results.results.bindings if results.results else []:
            try:
                layout = int(row["layout"].value) if "layout" in row else 1
                return StoreState(row["database"].value, int(row["position"].value), layout)
            except (KeyError, ValueError):
                continue
        return None

    async def union_default_graph(self) -> bool:
        """Whether the store answers a query without a dataset from the union of its named graphs."""
        return bool(msgspec.json.decode(await self._select(_UNION_QUERY), type=_Results).boolean)

    async def query(
        self, query: str, default_graphs: list[str], named_graphs: list[str], limit: int
    ) -> tuple[bytes, str]:
        """The store's answer (SPARQL JSON results, or N-Triples) and its media type, within the query timeout and
        ``MAX_ANSWER_BYTES`` (read as it streams)."""
        form: dict[str, Any] = {"query": query, "default-graph-uri": default_graphs, "named-graph-uri": named_graphs}
        try:
            async with asyncio.timeout(self.timeout):
                return await self._stream(form, limit)
        except TimeoutError:
            raise QueryTimeout(
                f"The query did not finish within {self.timeout:g} s (REGISTRY_SPARQL_TIMEOUT); simplify it or "
                "add LIMIT",
                headers={"Retry-After": "1"},
            ) from None

    async def _stream(self, form: dict[str, Any], limit: int) -> tuple[bytes, str]:
        with self._failures():
            async with self._client.stream(
                "POST", self.query_url, data=form, headers={"Accept": QUERY_ACCEPT}, timeout=self.timeout
            ) as response:
                if response.status_code >= 300:
                    message = (await response.aread()).decode(errors="replace")[:_MESSAGE_CHARS].strip()
                    if response.status_code == 400:
                        raise BadRequest(f"The SPARQL query is not valid: {message}", parserMessage=message)
                    raise self._refused(response.status_code, message)
                media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if media_type not in RESULTS_TYPES | GRAPH_TYPES:
                    raise StoreUnavailable(f"The SPARQL store answered in {media_type or 'no media type'}")
                parts: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_ANSWER_BYTES:
                        raise too_many(limit)
                    parts.append(chunk)
                return b"".join(parts), media_type

    async def _select(self, query: str) -> bytes:
        """An answer of the directory's own query (not bounded like a client's)."""
        with self._failures():
            response = await self._client.post(
                self.query_url, data={"query": query}, headers={"Accept": "application/sparql-results+json"}
            )
            if response.status_code >= 300:
                raise self._refused(response.status_code, response.text[:_MESSAGE_CHARS])
            return response.content

    async def _write(self, url: str, body: bytes, media_type: str) -> None:
        with self._failures():
            response = await self._client.post(url, content=body, headers={"Content-Type": media_type})
            if response.status_code >= 300:
                raise self._refused(response.status_code, response.text[:_MESSAGE_CHARS])

    def _refused(self, status: int, message: str) -> StoreUnavailable:
        return StoreUnavailable(
            f"The SPARQL store refused the directory's request ({status}: {message.strip()}); check "
            "REGISTRY_SPARQL_STORE_* (URLs, credentials)"
            if status < 500
            else f"The SPARQL store failed ({status}: {message.strip()})"
        )

    @contextlib.contextmanager
    def _failures(self) -> Iterator[None]:
        """Transport errors become :class:`StoreUnavailable`; ``failure`` records whether the store answered."""
        try:
            yield
        except httpx.HTTPError as error:
            self.failure = f"The SPARQL store cannot be reached ({type(error).__name__}: {error})"
            raise StoreUnavailable(self.failure) from error
        except StoreUnavailable as error:
            self.failure = error.detail
            raise
        except BadRequest:
            self.failure = None
            raise
        self.failure = None


__all__ = ["LAYOUT", "STATE_GRAPH", "SparqlStore", "StoreState", "StoreUnavailable", "state_update"]
