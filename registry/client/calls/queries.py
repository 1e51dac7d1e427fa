"""Queries (``/search``: SPARQL, JSONPath), capability resolution and the compatibility of two versions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import httpx
import msgspec

from registry.client.calls.call import Call, checked, decoded, json_body
from registry.client.errors import UnexpectedResponse
from registry.client.models import CompatibilityResult, Requirement, ResolveResult, SparqlResults
from registry.client.vocabulary import GraphMediaType

T = TypeVar("T")

SPARQL_RESULTS_JSON = "application/sparql-results+json"


def _sparql_call(query: str, accept: str, parse: Callable[[httpx.Response], T], post: bool) -> Call[T]:
    """SPARQL 1.1 protocol: the query in the URL (GET), or as the body (POST, for long queries)."""
    if post:
        headers = {"Accept": accept, "Content-Type": "application/sparql-query"}
        return Call("POST", "/search/sparql", parse, headers=headers, content=query.encode(), repeatable=True)
    return Call("GET", "/search/sparql", parse, params={"query": query}, headers={"Accept": accept})


def sparql(query: str, *, post: bool = False) -> Call[SparqlResults]:
    """A SELECT or ASK query; its answer in the SPARQL JSON results format."""

    def parse(response: httpx.Response) -> SparqlResults:
        checked(response)
        media_type = response.headers.get("content-type", "").partition(";")[0].strip()
        if media_type not in (SPARQL_RESULTS_JSON, "application/json"):
            raise UnexpectedResponse(
                f"the directory answered with {media_type or 'no content type'}, not SPARQL results: "
                "CONSTRUCT and DESCRIBE queries give graphs, ask for them with sparql_graph()"
            )
        return msgspec.json.decode(response.content, type=SparqlResults)

    return _sparql_call(query, SPARQL_RESULTS_JSON, parse, post)


def sparql_graph(query: str, *, media_type: GraphMediaType = "text/turtle", post: bool = False) -> Call[str]:
    """A CONSTRUCT or DESCRIBE query; the graph serialised as ``media_type``."""

    def parse(response: httpx.Response) -> str:
        return checked(response).text

    return _sparql_call(query, media_type, parse, post)


def jsonpath(query: str) -> Call[list[Any]]:
    """An RFC 9535 query over the array of all descriptions; the matches, as a list."""
    return Call("GET", "/search/jsonpath", decoded(list[Any]), params={"query": query})


# -- resolution and compatibility


def resolve(requirements: Sequence[Requirement | str | Mapping[str, Any]]) -> Call[ResolveResult]:
    """Requirements as ``Requirement``, a capability name or id (any version, highest), or a mapping sent as is."""
    body = [Requirement(item) if isinstance(item, str) else item for item in requirements]
    return Call("POST", "/api/v1/resolve", decoded(ResolveResult), repeatable=True, **json_body({"requirements": body}))


def _compatibility(body: Mapping[str, Any]) -> Call[CompatibilityResult]:
    return Call("POST", "/api/v1/compatibility", decoded(CompatibilityResult), repeatable=True, **json_body(body))


def compatibility(thing_id: str, from_version: str, to_version: str) -> Call[CompatibilityResult]:
    """Compare two kept versions of a description."""
    return _compatibility({"id": thing_id, "from": from_version, "to": to_version})


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> Call[CompatibilityResult]:
    """Compare two descriptions that need not be registered."""
    return _compatibility({"old": old, "new": new})
