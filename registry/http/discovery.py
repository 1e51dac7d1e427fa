"""Discovery API under ``/api/v1``: search, facets, summaries, versions, resolution, compatibility, tool formats.

Thin controllers: parameters in, ``DiscoveryService`` call, msgspec Struct out (so the OpenAPI document at
``/schema`` carries every request and response schema).

Description ids may contain ``/``; see registry/http/ids.py for how they reach the handlers as one segment.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import unquote

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from registry.config import Settings
from registry.discovery.service import DiscoveryService, SearchParams
from registry.http.bodies import reject_unknown_parameters
from registry.http.ids import thing_id_from
from registry.http.things import notice_headers
from registry.wire import (
    CompatibilityRequest,
    CompatibilityResult,
    Facets,
    ImportedTool,
    ResolveRequest,
    ResolveResult,
    SearchResult,
    ThingSummary,
    VersionDetail,
    VersionList,
)

PREFIX = "/api/v1"
SEARCH_PARAMETERS = frozenset(
    {"kind", "vendor", "capability", "capability_version", "type", "q", "sort", "limit", "cursor", "facets"}
)
FACET_PARAMETERS = SEARCH_PARAMETERS - {"sort", "limit", "cursor", "facets"}

#: The formats of registry.descriptions.tool_formats.FORMATS, as a type so the OpenAPI document lists them.
ToolFormat = Literal["openai", "anthropic", "mcp", "lmkit", "mojentic", "allos"]
IMPORT_PARAMETERS = frozenset({"format", "id", "vendor", "version", "href"})


Kind = Annotated[str | None, QueryParameter(description="agent, tool or thing")]
Vendor = Annotated[
    str | None, QueryParameter(description="Vendor name (lmos:metadata/lmos:vendor/lmos:name), any case")
]
CapabilityParam = Annotated[
    str | None, QueryParameter(description="Capability id or name (lmos:capabilities, actions)")
]
CapabilityVersion = Annotated[
    str | None,
    QueryParameter(
        description="Range the capability's version must satisfy: npm (^1.2, ~1.2.3, >=1 <2, 1.x) or [1.0,2.0)"
    ),
]
TypeParam = Annotated[str | None, QueryParameter(name="type", description="An @type the description has")]
Text = Annotated[str | None, QueryParameter(description="Free text (web search syntax), ranked by relevance")]


class DiscoveryController(Controller):
    path = PREFIX
    tags = ["Discovery"]

    @get("/search", operation_id="search", summary="Search agents, tools and things")
    async def search(
        self,
        request: Request[Any, Any, Any],
        discovery: NamedDependency[DiscoveryService],
        settings: NamedDependency[Settings],
        kind: Kind = None,
        vendor: Vendor = None,
        capability: CapabilityParam = None,
        capability_version: CapabilityVersion = None,
        type_: TypeParam = None,
        q: Text = None,
        sort: Annotated[
            str | None,
            QueryParameter(description="relevance (default with q), title (default) or modified (newest first)"),
        ] = None,
        limit: Annotated[int, QueryParameter(ge=1, description="Page size (capped by REGISTRY_MAX_PAGE_SIZE)")] = 20,
        cursor: Annotated[str | None, QueryParameter(description="next_cursor of the previous page")] = None,
        facets: Annotated[bool, QueryParameter(description="Add facet counts over all matches")] = False,
    ) -> SearchResult:
        reject_unknown_parameters(request, SEARCH_PARAMETERS)
        params = SearchParams(kind, vendor, capability, capability_version, type_, q, sort, limit, cursor, facets)
        return await discovery.search(params, settings.max_page_size)

    @get("/facets", operation_id="facets", summary="Counts by kind, vendor and capability")
    async def facets(
        self,
        request: Request[Any, Any, Any],
        discovery: NamedDependency[DiscoveryService],
        kind: Kind = None,
        vendor: Vendor = None,
        capability: CapabilityParam = None,
        capability_version: CapabilityVersion = None,
        type_: TypeParam = None,
        q: Text = None,
    ) -> Facets:
        reject_unknown_parameters(request, FACET_PARAMETERS)
        params = SearchParams(kind, vendor, capability, capability_version, type_, q)
        return await discovery.facets(params)

    @get("/things/{thing_id:str}/summary", operation_id="thingSummary", summary="The summary of a description")
    async def summary(self, thing_id: FromPath[str], discovery: NamedDependency[DiscoveryService]) -> ThingSummary:
        return await discovery.summary(thing_id_from(thing_id))

    @get("/things/{thing_id:str}/versions", operation_id="thingVersions", summary="Kept versions, newest first")
    async def versions(
        self,
        request: Request[Any, Any, Any],
        thing_id: FromPath[str],
        discovery: NamedDependency[DiscoveryService],
        satisfies: Annotated[
            str | None, QueryParameter(description="Only versions in this range; the first item is the newest match")
        ] = None,
    ) -> VersionList:
        reject_unknown_parameters(request, frozenset({"satisfies"}))
        return await discovery.versions(thing_id_from(thing_id), satisfies)

    @get("/things/{thing_id:str}/versions/{version:str}", operation_id="thingVersion", summary="One kept version")
    async def version(
        self, thing_id: FromPath[str], version: FromPath[str], discovery: NamedDependency[DiscoveryService]
    ) -> VersionDetail:
        return await discovery.version(thing_id_from(thing_id), unquote(version))

    @get(
        "/things/{thing_id:str}/export",
        operation_id="exportTool",
        summary="A tool, or an agent's actions, in an LLM tool format",
    )
    async def export(
        self,
        thing_id: FromPath[str],
        request: Request[Any, Any, Any],
        discovery: NamedDependency[DiscoveryService],
        tool_format: Annotated[ToolFormat, QueryParameter(name="format")],
    ) -> Response[Any]:
        reject_unknown_parameters(request, frozenset({"format"}))
        exported = await discovery.export(thing_id_from(thing_id), tool_format)
        return Response(content=exported, status_code=HTTP_200_OK)

    @post("/resolve", operation_id="resolveCapabilities", summary="Choose providers for capability requirements")
    async def resolve(
        self, data: JSONBody[ResolveRequest], discovery: NamedDependency[DiscoveryService]
    ) -> Response[ResolveResult]:
        return Response(await discovery.resolve(data), status_code=HTTP_200_OK)

    @post("/compatibility", operation_id="checkCompatibility", summary="Diff two versions or two documents")
    async def compatibility(
        self, data: JSONBody[CompatibilityRequest], discovery: NamedDependency[DiscoveryService]
    ) -> Response[CompatibilityResult]:
        return Response(await discovery.compatibility(data), status_code=HTTP_200_OK)

    @post("/tools/import", operation_id="importTool", summary="Store an LLM tool definition as an lmos:Tool")
    async def import_tool(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[dict[str, Any]],
        discovery: NamedDependency[DiscoveryService],
        tool_format: Annotated[ToolFormat, QueryParameter(name="format")],
        thing_id: Annotated[str | None, QueryParameter(name="id", description="Id of the description")] = None,
        vendor: Annotated[str | None, QueryParameter(description="Vendor name")] = None,
        version: Annotated[str | None, QueryParameter(description="version.instance (semantic version)")] = None,
        href: Annotated[str | None, QueryParameter(description="Where the tool is invoked (the action's form)")] = None,
    ) -> Response[ImportedTool]:
        reject_unknown_parameters(request, IMPORT_PARAMETERS)
        imported = await discovery.import_tool(
            tool_format, data, thing_id=thing_id, vendor=vendor, version=version, href=href
        )
        headers = {"Location": imported.location, **notice_headers(imported.notices)}
        status = HTTP_201_CREATED if imported.created else HTTP_200_OK
        return Response(imported, status_code=status, headers=headers)
