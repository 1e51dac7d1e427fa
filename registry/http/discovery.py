"""Discovery API under ``/api/v1``: search, facets, summaries, versions, resolution, compatibility, tool formats.

Thin controllers: parameters in, ``DiscoveryService`` call, msgspec Struct out (so the OpenAPI document at
``/schema`` carries every request and response schema).

Description ids may contain ``/``; see registry/http/middleware/ids.py for how they reach the handlers as one segment.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import unquote

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from registry.conventions.service import ConventionService
from registry.descriptions.ids import as_uri
from registry.discovery.service import DiscoveryService, SearchParams
from registry.http.access import principal_of, tenant_scope_of
from registry.http.bodies import reject_unknown_parameters
from registry.http.contract import JSON_OBJECT, Answer, documented, imported_answers
from registry.http.middleware.ids import thing_id_from
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
    {
        "kind",
        "vendor",
        "vendor_match",
        "capability",
        "capability_version",
        "type",
        "q",
        "sort",
        "limit",
        "cursor",
        "facets",
        "convention",
        "match",
        "mode",
    }
)
FACET_PARAMETERS = SEARCH_PARAMETERS - {"sort", "limit", "cursor", "facets", "mode"}

#: The formats of registry.descriptions.tool_formats.FORMATS, as a type so the OpenAPI document lists them.
ToolFormat = Literal["openai", "anthropic", "mcp", "lmkit", "mojentic", "allos"]
#: What ``/export`` can produce: the LLM tool formats, and an agent's A2A Agent Card.
ExportFormat = Literal["openai", "anthropic", "mcp", "lmkit", "mojentic", "allos", "a2a"]
IMPORT_PARAMETERS = frozenset({"format", "id", "vendor", "version", "href"})


Kind = Annotated[str | None, QueryParameter(description="agent, tool or thing")]
Convention = Annotated[
    str | None, QueryParameter(description="lmos, a2a (imported Agent Cards) or mcp (published MCP servers)")
]
Vendor = Annotated[
    str | None,
    QueryParameter(
        description="Vendor name (lmos:metadata/lmos:vendor/lmos:name), any case; matched as vendor_match says"
    ),
]
VendorMatch = Annotated[
    str | None,
    QueryParameter(
        description="words (default: each word a word or word prefix of the name), exact, or fuzzy (typos too)"
    ),
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
Text = Annotated[
    str | None,
    QueryParameter(
        description="A need in plain words, ranked by relevance (any word may match; hybrid full-text and vector "
        "retrieval, see mode), answered in one page; or, with match=all or when it uses web-search syntax (a double "
        "quote, the operator OR in capitals, a -word), every word must match. At most 32 terms (or not counted)"
    ),
]
Match = Annotated[
    str | None,
    QueryParameter(
        description="How q matches: any (plain words, ranked) or all (every word, web-search syntax); default: "
        "all when q uses the syntax (a double quote, OR in capitals, a -word), else any"
    ),
]


class DiscoveryController(Controller):
    path = PREFIX
    tags = ["Discovery"]

    @get("/search", operation_id="search", summary="Search agents, tools and things")
    async def search(
        self,
        request: Request[Any, Any, Any],
        discovery: NamedDependency[DiscoveryService],
        kind: Kind = None,
        vendor: Vendor = None,
        capability: CapabilityParam = None,
        capability_version: CapabilityVersion = None,
        type_: TypeParam = None,
        q: Text = None,
        sort: Annotated[
            str | None,
            QueryParameter(
                description="relevance (default with q), title (default), modified (newest first) or expires "
                "(descriptions with a lease only, the soonest to expire first)"
            ),
        ] = None,
        limit: Annotated[int, QueryParameter(ge=1, description="Page size (capped by REGISTRY_MAX_PAGE_SIZE)")] = 20,
        cursor: Annotated[str | None, QueryParameter(description="next_cursor of the previous page")] = None,
        facets: Annotated[bool, QueryParameter(description="Add facet counts over all matches")] = False,
        convention: Convention = None,
        vendor_match: VendorMatch = None,
        match: Match = None,
        mode: Annotated[
            str | None,
            QueryParameter(
                description="How a need in plain words is answered: lexical (full text), semantic (vectors) or "
                "hybrid (both, the default); lexical wherever vectors are not available (retrieval_note says why)"
            ),
        ] = None,
    ) -> SearchResult:
        reject_unknown_parameters(request, SEARCH_PARAMETERS)
        params = SearchParams(
            kind=kind,
            vendor=vendor,
            capability=capability,
            capability_version=capability_version,
            type=type_,
            q=q,
            sort=sort,
            limit=limit,
            cursor=cursor,
            facets=facets,
            convention=convention,
            vendor_match=vendor_match,
            match=match,
            mode=mode,
        )
        return await discovery.search(params, discovery.directory.settings.max_page_size, tenant_scope_of(request))

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
        convention: Convention = None,
        vendor_match: VendorMatch = None,
        match: Match = None,
    ) -> Facets:
        reject_unknown_parameters(request, FACET_PARAMETERS)
        params = SearchParams(
            kind=kind,
            vendor=vendor,
            capability=capability,
            capability_version=capability_version,
            type=type_,
            q=q,
            convention=convention,
            vendor_match=vendor_match,
            match=match,
        )
        return await discovery.facets(params, tenant_scope_of(request))

    @get("/things/{thing_id:str}/summary", operation_id="thingSummary", summary="The summary of a description")
    async def summary(
        self,
        thing_id: FromPath[str],
        request: Request[Any, Any, Any],
        discovery: NamedDependency[DiscoveryService],
    ) -> ThingSummary:
        await discovery.directory.require_visible(thing_id_from(thing_id), tenant_scope_of(request))
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
        return await discovery.versions(thing_id_from(thing_id), satisfies, tenant_scope_of(request))

    @get("/things/{thing_id:str}/versions/{version:str}", operation_id="thingVersion", summary="One kept version")
    async def version(
        self,
        thing_id: FromPath[str],
        version: FromPath[str],
        request: Request[Any, Any, Any],
        discovery: NamedDependency[DiscoveryService],
    ) -> VersionDetail:
        return await discovery.version(thing_id_from(thing_id), unquote(version), tenant_scope_of(request))

    @get(
        "/things/{thing_id:str}/export",
        operation_id="exportTool",
        summary="A tool, or an agent's actions, in an LLM tool format; an agent as an A2A Agent Card (a2a)",
        opt=documented(
            answers={
                200: Answer(
                    "A tool: one definition; an agent: a list, one per action (a2a: the Agent Card)",
                    {"application/json": {"oneOf": [JSON_OBJECT, {"type": "array", "items": JSON_OBJECT}]}},
                )
            }
        ),
    )
    async def export(
        self,
        thing_id: FromPath[str],
        request: Request[Any, Any, Any],
        discovery: NamedDependency[DiscoveryService],
        conventions: NamedDependency[ConventionService],
        export_format: Annotated[ExportFormat, QueryParameter(name="format")],
    ) -> Response[Any]:
        reject_unknown_parameters(request, frozenset({"format"}))
        await discovery.directory.require_visible(thing_id_from(thing_id), tenant_scope_of(request))
        if export_format == "a2a":
            return Response(content=await conventions.card(thing_id_from(thing_id)), status_code=HTTP_200_OK)
        exported = await discovery.export(thing_id_from(thing_id), export_format)
        return Response(content=exported, status_code=HTTP_200_OK)

    @post(
        "/resolve",
        operation_id="resolveCapabilities",
        summary="Choose providers for capability requirements",
        status_code=HTTP_200_OK,
        opt={"access": "read"},
    )
    async def resolve(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[ResolveRequest],
        discovery: NamedDependency[DiscoveryService],
    ) -> Response[ResolveResult]:
        return Response(await discovery.resolve(data, tenant_scope_of(request)), status_code=HTTP_200_OK)

    @post(
        "/compatibility",
        operation_id="checkCompatibility",
        summary="Diff two versions or two documents",
        status_code=HTTP_200_OK,
        opt={"access": "read", **documented(problems={404: "A version named (id with from or to) is not kept"})},
    )
    async def compatibility(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[CompatibilityRequest],
        discovery: NamedDependency[DiscoveryService],
    ) -> Response[CompatibilityResult]:
        return Response(await discovery.compatibility(data, tenant_scope_of(request)), status_code=HTTP_200_OK)

    @post(
        "/tools/import",
        operation_id="importTool",
        summary="Store an LLM tool definition as an lmos:Tool",
        opt=imported_answers("ImportedTool"),
    )
    async def import_tool(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[dict[str, Any]],
        discovery: NamedDependency[DiscoveryService],
        tool_format: Annotated[
            ToolFormat | None,
            QueryParameter(name="format", description="The tool's format; detected from its members when omitted"),
        ] = None,
        thing_id: Annotated[str | None, QueryParameter(name="id", description="Id of the description")] = None,
        vendor: Annotated[str | None, QueryParameter(description="Vendor name")] = None,
        version: Annotated[str | None, QueryParameter(description="version.instance (semantic version)")] = None,
        href: Annotated[str | None, QueryParameter(description="Where the tool is invoked (the action's form)")] = None,
    ) -> Response[ImportedTool]:
        reject_unknown_parameters(request, IMPORT_PARAMETERS)
        imported = await discovery.import_tool(
            tool_format,
            data,
            thing_id=thing_id,
            vendor=vendor,
            version=version,
            href=href,
            principal=principal_of(request),
        )
        # The body carries every notice; the header is capped.
        headers = {
            "Location": as_uri(imported.location),
            **notice_headers(imported.notices, discovery.directory.settings),
        }
        status = HTTP_201_CREATED if imported.created else HTTP_200_OK
        return Response(imported, status_code=status, headers=headers)
