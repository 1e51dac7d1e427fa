"""Search API of WoT Discovery §7.3.2.4: SPARQL 1.1 Protocol, JSONPath (RFC 9535); XPath is not supported."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency

from registry.config import Settings
from registry.directory.search import SearchService
from registry.directory.service import DirectoryService
from registry.errors import BadRequest
from registry.http.access import requester, tenant_scope_of
from registry.http.bodies import JSON, media_type, require_media_type
from registry.http.contract import JSON_OBJECT, Answer, Body, Param, documented
from registry.http.problems import problem_response
from registry.http.things import notice_headers
from registry.semantic.prefixes import canonical_lmos_namespace, check_prefixes

FORM = "application/x-www-form-urlencoded"
SPARQL_QUERY = "application/sparql-query"


_GRAPHS = [
    Param("default-graph-uri", "A description id whose graph is the default graph (repeatable)"),
    Param("named-graph-uri", "A description id whose graph is a named graph (repeatable)"),
]
_RESULTS = {
    200: Answer(
        "SELECT/ASK results or, for CONSTRUCT/DESCRIBE, a graph: in the media type Accept prefers (SELECT/ASK: "
        "SPARQL JSON by default; graphs: JSON-LD by default)",
        {
            "application/sparql-results+json": JSON_OBJECT,
            "application/json": JSON_OBJECT,
            "application/sparql-results+xml": {"type": "string"},
            "application/xml": {"type": "string"},
            "text/csv": {"type": "string"},
            "text/tab-separated-values": {"type": "string"},
            "application/ld+json": {},
            "text/turtle": {"type": "string"},
            "application/n-triples": {"type": "string"},
            "application/rdf+xml": {"type": "string"},
            "application/n-quads": {"type": "string"},
            "application/trig": {"type": "string"},
        },
        headers={"Vary": "Accept"},
    )
}
_BUSY = {
    429: "This client already has REGISTRY_SPARQL_CLIENT_CONCURRENCY queries in flight",
    406: "An ASK query asked for CSV or TSV only (SPARQL 1.1 defines them for SELECT); acceptable lists the types",
    502: "A SERVICE endpoint of the query (allow-listed) could not be queried",
}
_JSONPATH_BUSY = {
    429: "This client already has REGISTRY_JSONPATH_CLIENT_CONCURRENCY searches in flight",
    503: "Every JSONPath thread stayed busy for REGISTRY_JSONPATH_TIMEOUT, or the database is unavailable",
}
_QUERY = Param("query", "The SPARQL 1.1 query (read-only)", required=True)


def _single_query(values: list[str]) -> str:
    if len(values) != 1:
        raise BadRequest(
            "Exactly one query parameter is required (SPARQL 1.1 Protocol)"
            if not values
            else "The query parameter is given more than once",
            invalidParams=[{"name": "query", "reason": "required exactly once"}],
        )
    if not values[0].strip():
        raise BadRequest("The query is empty", invalidParams=[{"name": "query", "reason": "empty"}])
    return values[0]


async def _answer(
    request: Request[Any, Any, Any],
    search: NamedDependency[SearchService],
    settings: Settings,
    query: str,
    default_graphs: list[str],
    named_graphs: list[str],
) -> Response[bytes]:
    client = requester(request)
    query, notices = canonical_lmos_namespace(query)
    check_prefixes(query)
    answer = await search.sparql(
        query, request.headers.get("accept", "*/*"), default_graphs, named_graphs, client, tenant_scope_of(request)
    )
    headers = {"Vary": "Accept", **notice_headers(notices, settings)}
    return Response(content=answer.content, media_type=answer.media_type, headers=headers)


class SearchController(Controller):
    path = "/search"
    tags = ["Search (WoT Discovery)"]

    @get(
        "/sparql",
        operation_id="searchSPARQL",
        summary="SPARQL 1.1 query (GET)",
        opt=documented(parameters=[_QUERY, *_GRAPHS], answers=_RESULTS, problems=_BUSY),
    )
    async def sparql_get(
        self,
        request: Request[Any, Any, Any],
        search: NamedDependency[SearchService],
        directory: NamedDependency[DirectoryService],
    ) -> Response[bytes]:
        params = request.query_params
        if params.getall("update", []):
            raise BadRequest("This SPARQL endpoint is read-only: update requests are not accepted")
        return await _answer(
            request,
            search,
            directory.settings,
            _single_query(params.getall("query", [])),
            params.getall("default-graph-uri", []),
            params.getall("named-graph-uri", []),
        )

    @post(
        "/sparql",
        operation_id="searchSPARQLPost",
        summary="SPARQL 1.1 query (POST)",
        status_code=200,
        opt={
            "access": "read",
            **documented(
                body=Body(
                    {
                        FORM: {
                            "type": "object",
                            "required": ["query"],
                            "properties": {
                                "query": {"type": "string"},
                                "default-graph-uri": {"type": "array", "items": {"type": "string"}},
                                "named-graph-uri": {"type": "array", "items": {"type": "string"}},
                            },
                        },
                        SPARQL_QUERY: {"type": "string"},
                    },
                    "The query as a form (query=…) or directly (application/sparql-query, graphs in the URL)",
                ),
                parameters=_GRAPHS,
                answers=_RESULTS,
                problems=_BUSY,
            ),
        },
    )
    async def sparql_post(
        self,
        request: Request[Any, Any, Any],
        search: NamedDependency[SearchService],
        directory: NamedDependency[DirectoryService],
    ) -> Response[bytes]:
        require_media_type(request, (FORM, SPARQL_QUERY))
        body = await request.body()
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise BadRequest("The request body is not UTF-8") from error
        if media_type(request) == SPARQL_QUERY:
            params = request.query_params
            query = _single_query([text])
            default_graphs, named_graphs = params.getall("default-graph-uri", []), params.getall("named-graph-uri", [])
        else:
            form = parse_qs(text, keep_blank_values=True)
            if form.get("update"):
                raise BadRequest("This SPARQL endpoint is read-only: update requests are not accepted")
            query = _single_query(form.get("query", []))
            default_graphs, named_graphs = form.get("default-graph-uri", []), form.get("named-graph-uri", [])
        return await _answer(request, search, directory.settings, query, default_graphs, named_graphs)

    @get(
        "/jsonpath",
        operation_id="searchJSONPath",
        summary="JSONPath (RFC 9535) over all descriptions",
        opt=documented(
            parameters=[Param("query", "The JSONPath expression (RFC 9535)", required=True)],
            answers={200: Answer("The matches, in document order", {JSON: {"type": "array", "items": {}}})},
            problems=_JSONPATH_BUSY,
        ),
    )
    async def jsonpath(
        self, request: Request[Any, Any, Any], search: NamedDependency[SearchService]
    ) -> Response[bytes]:
        """The query is applied to the array of all stored descriptions; the answer is the array of matches."""
        expression = _single_query(request.query_params.getall("query", []))
        answer = await search.jsonpath(expression, tenant_scope_of(request), requester(request))
        return Response(content=answer, media_type=JSON)

    @get("/xpath", operation_id="searchXPath", summary="XPath search (not supported)", include_in_schema=False)
    async def xpath(self) -> Response[bytes]:
        return problem_response(
            501, "XPath search is not supported by this directory; use /search/jsonpath or /search/sparql"
        )

    @get("/stats", operation_id="searchStats", summary="State of the SPARQL index and of unknown contexts")
    async def stats(self, request: Request[Any, Any, Any], search: NamedDependency[SearchService]) -> dict[str, Any]:
        return await search.stats(tenant_scope_of(request))
