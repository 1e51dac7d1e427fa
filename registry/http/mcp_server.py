"""The directory as an MCP server: ``POST /mcp`` (Streamable HTTP, stateless, JSON answers) for LLM agents and MCP
hosts, built on the official ``mcp`` SDK's low-level server.

Tools: ``find`` (a need in words → ranked agents and tools with score, match quality, the matched capability and
how to call it), ``get_description``, ``resolve_capability``, ``check_compatibility`` and ``export_tool``; every
description is a resource (``registry://things/{id}``, listed page by page). Each tool runs a discovery use case
(registry/discovery/) with what the caller's tenant may read, so an MCP host sees what the REST API shows it.

The route is an ASGI mount in the Litestar application: the input boundary (``Host`` names, cross-site
``Origin``s: DNS rebinding) and the access guard (bearer credential, tenant scope, rate limits) apply to it as to
the REST API; a request without a credential where one is needed gets 401. ``/v0`` (registry/http/mcp.py) is a
different thing: the MCP *Registry* API, where MCP servers are published.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal
from urllib.parse import quote, unquote

import msgspec
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError

from registry.auth.tenancy import EVERYTHING, TenantScope
from registry.discovery.find import FindRequest, find
from registry.discovery.service import DiscoveryService, SearchParams
from registry.errors import NotFound, RegistryError
from registry.found import Findings
from registry.http.dependencies import ServiceHolder
from registry.http.directory import package_version
from registry.wire import CompatibilityRequest, CompatibilityResult, Requirement, ResolveRequest, ResolveResult

log = logging.getLogger(__name__)

#: Resource URIs of descriptions: the id percent-encoded as one segment.
RESOURCE_PREFIX = "registry://things/"
RESOURCE_TEMPLATE = RESOURCE_PREFIX + "{id}"
TD_JSON = "application/td+json"
#: Descriptions per page of ``resources/list``.
RESOURCES_PAGE = 100
#: JSON-RPC error code of a resource that does not exist (MCP specification, resources).
RESOURCE_NOT_FOUND = -32002
#: What the tenant scope is where no guard ran (authentication off): everything; else only shared descriptions.
SHARED_ONLY = TenantScope(everything=False, tenant=None)

ToolFormat = Literal["openai", "anthropic", "mcp", "lmkit", "mojentic", "allos"]
DescriptionId = Annotated[
    str, msgspec.Meta(min_length=1, max_length=2048, description="The description's id (an IRI, from find)")
]


# -- tool arguments (their JSON Schemas are the tools' input schemas)


class GetDescriptionArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: DescriptionId


class ResolveArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    capability: Annotated[
        str, msgspec.Meta(min_length=1, max_length=500, description="Capability id (an IRI) or name, any case")
    ]
    range: Annotated[
        str,
        msgspec.Meta(
            min_length=1, max_length=200, description="Versions accepted: npm (^1.2, ~1.2.3, >=1 <2, 1.x, *) or Maven"
        ),
    ] = "*"
    strategy: Annotated[
        Literal["highest", "lowest", "closest"],
        msgspec.Meta(description="Which version in range wins: the highest, the lowest or the closest to closest_to"),
    ] = "highest"
    closest_to: Annotated[str | None, msgspec.Meta(description="The version strategy closest aims at")] = None
    include_vendors: Annotated[list[str], msgspec.Meta(description="Only providers of these vendors")] = []
    exclude_vendors: Annotated[list[str], msgspec.Meta(description="Never providers of these vendors")] = []
    prefer_vendors: Annotated[list[str], msgspec.Meta(description="Providers of these vendors first, in order")] = []


class CompatibilityArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: Annotated[
        Annotated[str, msgspec.Meta(min_length=1)] | None,
        msgspec.Meta(description="Compare two kept versions of this description"),
    ] = None
    from_: Annotated[str | None, msgspec.Meta(description="The older version (with id)")] = msgspec.field(
        default=None, name="from"
    )
    to: Annotated[str | None, msgspec.Meta(description="The newer version (with id)")] = None
    old: Annotated[dict[str, Any] | None, msgspec.Meta(description="The older Thing Description (with new)")] = None
    new: Annotated[dict[str, Any] | None, msgspec.Meta(description="The newer Thing Description (with old)")] = None


class ExportArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: DescriptionId
    format: Annotated[
        ToolFormat, msgspec.Meta(description="openai, anthropic or mcp (also lmkit, mojentic, allos)")
    ] = "openai"


class Exported(msgspec.Struct, frozen=True):
    #: The tool definitions: one per function of a tool, one per action of an agent.
    tools: list[dict[str, Any]]
    format: str


Handler = Callable[[DiscoveryService, Any, TenantScope], Awaitable[msgspec.Struct]]


class ToolSpec(msgspec.Struct, frozen=True):
    name: str
    title: str
    description: str
    arguments: type[msgspec.Struct]
    result: type[msgspec.Struct] | None
    run: Handler


async def _find(discovery: DiscoveryService, args: FindRequest, readers: TenantScope) -> Findings:
    return await find(discovery, args, readers)


async def _get_description(discovery: DiscoveryService, args: GetDescriptionArgs, readers: TenantScope) -> Any:
    stored = await discovery.directory.get(args.id, readers)
    return _Description(id=args.id, document=discovery.directory.enriched(stored))


class _Description(msgspec.Struct, frozen=True):
    id: str
    #: The Thing Description, with its registration information.
    document: dict[str, Any]


async def _resolve(discovery: DiscoveryService, args: ResolveArgs, readers: TenantScope) -> ResolveResult:
    requirement = msgspec.convert(msgspec.to_builtins(args), Requirement)
    return await discovery.resolve(ResolveRequest(requirements=[requirement]), readers)


async def _compatibility(
    discovery: DiscoveryService, args: CompatibilityArgs, readers: TenantScope
) -> CompatibilityResult:
    request = CompatibilityRequest(id=args.id, from_=args.from_, to=args.to, old=args.old, new=args.new)
    return await discovery.compatibility(request, readers)


async def _export(discovery: DiscoveryService, args: ExportArgs, readers: TenantScope) -> Exported:
    await discovery.directory.get(args.id, readers)  # another tenant's is as absent as a missing one
    exported = await discovery.export(args.id, args.format)
    return Exported(tools=exported if isinstance(exported, list) else [exported], format=args.format)


TOOLS = {
    spec.name: spec
    for spec in (
        ToolSpec(
            "find",
            "Find agents and tools by need",
            "Find agents and tools that meet a need stated in plain words. Returns hits best first, each with its "
            "score (0 to 1), match quality (strong: a fit; weak: maybe none fits), the capabilities that matched "
            "and how to call it (endpoint and forms). Narrow with kind, vendor, capability and version.",
            FindRequest,
            Findings,
            _find,
        ),
        ToolSpec(
            "get_description",
            "Get a description",
            "The full Thing Description of an agent, tool or thing by its id (as find returns it): its actions, "
            "forms, security and metadata.",
            GetDescriptionArgs,
            _Description,
            _get_description,
        ),
        ToolSpec(
            "resolve_capability",
            "Resolve a capability to a provider",
            "Choose the best live provider of a capability within a version range; the answer explains the choice "
            "(every candidate considered, and why each was chosen or left out).",
            ResolveArgs,
            ResolveResult,
            _resolve,
        ),
        ToolSpec(
            "check_compatibility",
            "Check compatibility of two versions",
            "Compare two kept versions of a description (id, from, to) or two Thing Descriptions (old, new): the "
            "verdict (compatible or breaking), each change and the version bump it needs.",
            CompatibilityArgs,
            CompatibilityResult,
            _compatibility,
        ),
        ToolSpec(
            "export_tool",
            "Export as an LLM tool",
            "A tool, or each action of an agent, as a tool definition in an LLM's format (OpenAI, Anthropic, MCP), "
            "ready to hand to a model.",
            ExportArgs,
            Exported,
            _export,
        ),
    )
}


def _object_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema of ``struct`` as an object schema (MCP wants ``type: object`` at the top), with the
    schemas it refers to under ``$defs``."""
    (reference,), components = msgspec.json.schema_components([struct], ref_template="#/$defs/{name}")
    name = reference["$ref"].rsplit("/", 1)[1]
    schema = dict(components.pop(name))
    if components:
        schema["$defs"] = components
    return schema


def tool_list() -> list[types.Tool]:
    return [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=_object_schema(spec.arguments),
            output_schema=None if spec.result is None else _object_schema(spec.result),
            annotations=types.ToolAnnotations(
                title=spec.title, read_only_hint=True, destructive_hint=False, idempotent_hint=True
            ),
        )
        for spec in TOOLS.values()
    ]


def _failure(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


#: The problem members that list reasons, with the members of each item naming what and why.
_REASON_LISTS = (("invalidParams", "name", "reason"), ("validationErrors", "field", "description"))


def _error_message(error: RegistryError) -> str:
    """The problem's detail and its first ten reasons (invalid parameters, then validation errors)."""
    reasons = [
        f"{item[what]}: {item[why]}"
        for member, what, why in _REASON_LISTS
        for item in error.extra.get(member) or []
        if isinstance(item, dict) and what in item and why in item
    ]
    return error.detail + (f" ({'; '.join(reasons[:10])})" if reasons else "")


async def call_tool(
    discovery: DiscoveryService, name: str, arguments: dict[str, Any] | None, readers: TenantScope
) -> types.CallToolResult:
    """Run tool ``name``: invalid arguments and refusals of the use case are tool errors with their reason."""
    spec = TOOLS.get(name)
    if spec is None:
        return _failure(f"Unknown tool {name!r}; the tools are {', '.join(TOOLS)}")
    try:
        args = msgspec.convert(arguments or {}, spec.arguments)
    except msgspec.ValidationError as error:
        return _failure(f"Invalid arguments for {name}: {error}")
    try:
        result = await spec.run(discovery, args, readers)
    except RegistryError as error:
        return _failure(_error_message(error))
    structured = msgspec.to_builtins(result)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=msgspec.json.encode(structured).decode())],
        structured_content=structured,
    )


# -- resources


def resource_uri(thing_id: str) -> str:
    return RESOURCE_PREFIX + quote(thing_id, safe="")


async def list_resources(
    discovery: DiscoveryService, cursor: str | None, readers: TenantScope
) -> types.ListResourcesResult:
    params = SearchParams(sort="title", limit=RESOURCES_PAGE, cursor=cursor)
    try:
        page = await discovery.search(params, discovery.directory.settings.max_page_size, readers)
    except RegistryError as error:
        raise MCPError(code=types.INVALID_PARAMS, message=_error_message(error)) from error
    resources = [
        types.Resource(
            uri=resource_uri(item.id),
            name=item.id,
            title=item.title,
            description=item.description,
            mime_type=TD_JSON,
        )
        for item in page.items
    ]
    return types.ListResourcesResult(resources=resources, next_cursor=page.next_cursor)


async def read_resource(discovery: DiscoveryService, uri: str, readers: TenantScope) -> types.ReadResourceResult:
    if not uri.startswith(RESOURCE_PREFIX) or len(uri) == len(RESOURCE_PREFIX):
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"Not a resource of this directory: {uri[:200]!r} (descriptions are {RESOURCE_TEMPLATE})",
        )
    thing_id = unquote(uri[len(RESOURCE_PREFIX) :])
    try:
        served, _ = await discovery.directory.served(thing_id, readers)
    except NotFound as error:
        raise MCPError(code=RESOURCE_NOT_FOUND, message=error.detail, data={"uri": uri}) from error
    except RegistryError as error:
        raise MCPError(code=types.INVALID_PARAMS, message=_error_message(error), data={"uri": uri}) from error
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, text=served.decode(), mime_type=TD_JSON)]
    )


RESOURCE_TEMPLATES = [
    types.ResourceTemplate(
        uri_template=RESOURCE_TEMPLATE,
        name="description",
        title="Thing Description by id",
        description="The Thing Description of an agent, tool or thing; {id} is its id, percent-encoded",
        mime_type=TD_JSON,
    )
]


# -- the server


def readers_of(ctx: ServerRequestContext[Any, Any], open_access: bool) -> TenantScope:
    """What the caller may read: the tenant scope the access guard put in the HTTP request's scope."""
    scope = getattr(ctx.request, "scope", None)
    found = scope.get("auth") if isinstance(scope, dict) else None
    if isinstance(found, TenantScope):
        return found
    return EVERYTHING if open_access else SHARED_ONLY


def build_server(holder: ServiceHolder, *, open_access: bool) -> Server[Any]:
    """The MCP server of the directory's discovery use cases (``open_access``: authentication is off)."""

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list())

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        discovery = holder.services.discovery
        try:
            return await call_tool(discovery, params.name, params.arguments, readers_of(ctx, open_access))
        except Exception:  # a defect, not the caller's fault: logged, and an error result rather than a crash
            log.exception("MCP tool %r failed", params.name)
            return _failure(f"The tool {params.name} failed unexpectedly; the directory logged why")

    async def on_list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        return await list_resources(holder.services.discovery, cursor, readers_of(ctx, open_access))

    async def on_list_resource_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=RESOURCE_TEMPLATES)

    async def on_read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await read_resource(holder.services.discovery, str(params.uri), readers_of(ctx, open_access))

    return Server(
        "lmos-registry",
        version=package_version(),
        title="LMOS Agent and Tool Registry",
        instructions="A directory of AI agents and tools. Use find with a need in plain words to get candidates, "
        "their match quality and how to call them; get_description for the full description.",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_list_resource_templates=on_list_resource_templates,
        on_read_resource=on_read_resource,
    )


def session_manager(holder: ServiceHolder, *, open_access: bool, max_body_bytes: int) -> StreamableHTTPSessionManager:
    """The MCP server's stateless session manager, answering in JSON."""
    server = build_server(holder, open_access=open_access)
    return StreamableHTTPSessionManager(
        server, json_response=True, stateless=True, max_request_body_size=max_body_bytes
    )


__all__ = ["TOOLS", "build_server", "call_tool", "resource_uri", "session_manager"]
