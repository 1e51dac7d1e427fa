"""Discovery API under ``/api/v1``: search, facets, summaries, versions, resolution, compatibility, tool formats.

Thin controllers: parameters in, ``DiscoveryService`` call, msgspec Struct out (so the OpenAPI document at
``/schema`` carries every request and response schema).

Description ids may contain ``/`` (``https://…`` ids). ``thing_ids_as_segments`` wraps the ASGI application and
rewrites ``/api/v1/things/{id}/{summary|versions[/{version}]|export}`` so the id, percent-encoded, is one path
segment; the handlers decode it again. Clients may send the id percent-encoded or not.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import quote, unquote, unquote_to_bytes

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import State
from litestar.enums import ScopeType
from litestar.params import Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED
from litestar.types import ASGIApp, Receive, Scope, Send

from registry.discovery import (
    CompatibilityRequest,
    CompatibilityResult,
    DiscoveryService,
    Facets,
    ImportedTool,
    ResolveRequest,
    ResolveResult,
    SearchParams,
    SearchResult,
    ThingSummary,
    VersionDetail,
    VersionList,
)
from registry.errors import BadRequest
from registry.http.things import _notice_headers

PREFIX = "/api/v1"
THINGS_PREFIX = PREFIX + "/things/"
SEARCH_PARAMETERS = frozenset(
    {"kind", "vendor", "capability", "capability_version", "type", "q", "sort", "limit", "cursor", "facets"}
)
FACET_PARAMETERS = SEARCH_PARAMETERS - {"sort", "limit", "cursor", "facets"}
_THING_TAIL = re.compile(r"^(?P<id>.+)/(?P<tail>summary|export|versions(?:/[^/]+)?)$")

#: The formats of registry.descriptions.tool_formats.FORMATS, as a type so the OpenAPI document lists them.
ToolFormat = Literal["openai", "anthropic", "mcp", "lmkit", "mojentic", "allos"]
IMPORT_PARAMETERS = frozenset({"format", "id", "vendor", "version", "href"})


def thing_ids_as_segments(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP and scope["path"].startswith(THINGS_PREFIX):
            raw: bytes = scope.get("raw_path") or scope["path"].encode()
            try:
                rest = unquote_to_bytes(raw.partition(b"?")[0][len(THINGS_PREFIX) :]).decode("utf-8")
            except UnicodeDecodeError:
                rest = ""  # not an id: routing answers 404
            match = _THING_TAIL.match(rest)
            if match:
                path = THINGS_PREFIX + quote(match["id"], safe="") + "/" + match["tail"]
                scope["path"], scope["raw_path"] = path, path.encode()
        await app(scope, receive, send)

    return middleware


def _id(segment: str) -> str:
    return unquote(segment)


def _reject_unknown(request: Request[Any, Any, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(request.query_params.keys()) - allowed)
    if unknown:
        raise BadRequest(
            f"Unknown query parameter(s): {', '.join(unknown)}; supported are {', '.join(sorted(allowed))}",
            invalidParams=[{"name": name, "reason": "not supported"} for name in unknown],
        )


def _discovery(state: State) -> DiscoveryService:
    service: DiscoveryService = state.discovery
    return service


Kind = Annotated[str | None, Parameter(description="agent, tool or thing")]
Vendor = Annotated[str | None, Parameter(description="Vendor name (lmos:metadata/lmos:vendor/lmos:name), any case")]
CapabilityParam = Annotated[str | None, Parameter(description="Capability id or name (lmos:capabilities, actions)")]
CapabilityVersion = Annotated[
    str | None,
    Parameter(description="Range the capability's version must satisfy: npm (^1.2, ~1.2.3, >=1 <2, 1.x) or [1.0,2.0)"),
]
TypeParam = Annotated[str | None, Parameter(query="type", description="An @type the description has")]
Text = Annotated[str | None, Parameter(description="Free text (web search syntax), ranked by relevance")]


class DiscoveryController(Controller):
    path = PREFIX
    tags = ["Discovery"]

    @get("/search", operation_id="search", summary="Search agents, tools and things")
    async def search(
        self,
        request: Request[Any, Any, Any],
        state: State,
        kind: Kind = None,
        vendor: Vendor = None,
        capability: CapabilityParam = None,
        capability_version: CapabilityVersion = None,
        type_: TypeParam = None,
        q: Text = None,
        sort: Annotated[
            str | None, Parameter(description="relevance (default with q), title (default) or modified (newest first)")
        ] = None,
        limit: Annotated[int, Parameter(ge=1, description="Page size (capped by REGISTRY_MAX_PAGE_SIZE)")] = 20,
        cursor: Annotated[str | None, Parameter(description="next_cursor of the previous page")] = None,
        facets: Annotated[bool, Parameter(description="Add facet counts over all matches")] = False,
    ) -> SearchResult:
        _reject_unknown(request, SEARCH_PARAMETERS)
        params = SearchParams(kind, vendor, capability, capability_version, type_, q, sort, limit, cursor, facets)
        return await _discovery(state).search(params, state.settings.max_page_size)

    @get("/facets", operation_id="facets", summary="Counts by kind, vendor and capability")
    async def facets(
        self,
        request: Request[Any, Any, Any],
        state: State,
        kind: Kind = None,
        vendor: Vendor = None,
        capability: CapabilityParam = None,
        capability_version: CapabilityVersion = None,
        type_: TypeParam = None,
        q: Text = None,
    ) -> Facets:
        _reject_unknown(request, FACET_PARAMETERS)
        params = SearchParams(kind, vendor, capability, capability_version, type_, q)
        return await _discovery(state).facets(params)

    @get("/things/{thing_id:str}/summary", operation_id="thingSummary", summary="The summary of a description")
    async def summary(self, thing_id: str, state: State) -> ThingSummary:
        return await _discovery(state).summary(_id(thing_id))

    @get("/things/{thing_id:str}/versions", operation_id="thingVersions", summary="Kept versions, newest first")
    async def versions(
        self,
        request: Request[Any, Any, Any],
        thing_id: str,
        state: State,
        satisfies: Annotated[
            str | None, Parameter(description="Only versions in this range; the first item is the newest match")
        ] = None,
    ) -> VersionList:
        _reject_unknown(request, frozenset({"satisfies"}))
        return await _discovery(state).versions(_id(thing_id), satisfies)

    @get("/things/{thing_id:str}/versions/{version:str}", operation_id="thingVersion", summary="One kept version")
    async def version(self, thing_id: str, version: str, state: State) -> VersionDetail:
        return await _discovery(state).version(_id(thing_id), unquote(version))

    @get(
        "/things/{thing_id:str}/export",
        operation_id="exportTool",
        summary="A tool, or an agent's actions, in an LLM tool format",
    )
    async def export(
        self,
        thing_id: str,
        request: Request[Any, Any, Any],
        state: State,
        tool_format: Annotated[ToolFormat, Parameter(query="format")],
    ) -> Response[Any]:
        _reject_unknown(request, frozenset({"format"}))
        exported = await _discovery(state).export(_id(thing_id), tool_format)
        return Response(content=exported, status_code=HTTP_200_OK)

    @post("/resolve", operation_id="resolveCapabilities", summary="Choose providers for capability requirements")
    async def resolve(self, data: ResolveRequest, state: State) -> Response[ResolveResult]:
        return Response(await _discovery(state).resolve(data), status_code=HTTP_200_OK)

    @post("/compatibility", operation_id="checkCompatibility", summary="Diff two versions or two documents")
    async def compatibility(self, data: CompatibilityRequest, state: State) -> Response[CompatibilityResult]:
        return Response(await _discovery(state).compatibility(data), status_code=HTTP_200_OK)

    @post("/tools/import", operation_id="importTool", summary="Store an LLM tool definition as an lmos:Tool")
    async def import_tool(
        self,
        request: Request[Any, Any, Any],
        data: dict[str, Any],
        state: State,
        tool_format: Annotated[ToolFormat, Parameter(query="format")],
        thing_id: Annotated[str | None, Parameter(query="id", description="Id of the description")] = None,
        vendor: Annotated[str | None, Parameter(description="Vendor name")] = None,
        version: Annotated[str | None, Parameter(description="version.instance (semantic version)")] = None,
        href: Annotated[str | None, Parameter(description="Where the tool is invoked (the action's form)")] = None,
    ) -> Response[ImportedTool]:
        _reject_unknown(request, IMPORT_PARAMETERS)
        imported, notices = await _discovery(state).import_tool(
            tool_format, data, thing_id=thing_id, vendor=vendor, version=version, href=href
        )
        headers = {"Location": imported.location, **_notice_headers(notices)}
        status = HTTP_201_CREATED if imported.created else HTTP_200_OK
        return Response(imported, status_code=status, headers=headers)
