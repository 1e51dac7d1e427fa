"""The MCP Registry API (generic registry API, spec 2025-12-01) over the directory's store, under ``/v0.1`` and
under ``/v0``, as the official registry serves it (the same handlers; ``mcp-publisher`` and ``mcp-registry-cli``
call ``/v0/publish`` and ``/v0/servers/{name}/…/status``).

MCP clients (VS Code's MCP gallery, the ``mcp-publisher`` CLI) read and publish ``server.json`` entries here.
Errors keep the project's RFC 7807 members but travel as ``application/json`` with the ``error`` member the MCP
specification documents, so that clients written against the official ``openapi.yaml`` read them.
Published versions are immutable: the optional ``PUT …/versions/{version}`` answers 501, as the specification
documents for a registry without updates; a version's status changes with ``PATCH …/status`` or ``DELETE``.
Server names hold one ``/`` (``io.github.user/weather``): see registry/http/middleware/ids.py for how they reach
the handlers.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from typing import Annotated, Any
from urllib.parse import unquote

import msgspec
from litestar import Controller, Request, Response, delete, get, patch, post, put
from litestar.di import NamedDependency
from litestar.exceptions import HTTPException, ValidationException
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.types import OperationIDCreator

from registry.conventions.service import DEFAULT_SERVER_PAGE, ConventionService, ServerListing
from registry.errors import BadRequest, NotSupported, RegistryError
from registry.http.access import principal_of, tenant_scope_of
from registry.http.contract import documented
from registry.http.problems import exception_handlers as problem_handlers
from registry.wire import McpAllVersionsStatus, McpServerList, McpServerResponse, McpStatusUpdate

PREFIX = "/v0.1"
#: Every prefix the API is served under; the first is the one the specification's document names.
PREFIXES = (PREFIX, "/v0")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})?$")
IncludeDeleted = Annotated[bool, QueryParameter(description="Include deleted versions (default false)")]


def _mcp_error(request: Request[Any, Any, Any], error: Exception) -> Response[bytes]:
    """The project's problem document, as ``application/json`` with the MCP ``error`` member."""
    handler = next(
        handler for kind, handler in problem_handlers.items() if isinstance(kind, type) and isinstance(error, kind)
    )
    problem = handler(request, error)
    body = msgspec.json.decode(problem.content)
    return Response(
        content=msgspec.json.encode({"error": body.get("detail"), **body}),
        status_code=problem.status_code,
        media_type="application/json",
        headers=problem.headers,
    )


def _paths(path: str) -> list[str]:
    return [prefix + path for prefix in PREFIXES]


def _operation(name: str) -> OperationIDCreator:
    """One operation id per served prefix: ``name`` under ``/v0.1``, ``name`` + ``V0`` under ``/v0``."""

    def operation_id(_handler: Any, _method: Any, components: list[Any]) -> str:
        return name if components and components[0] == PREFIX.lstrip("/") else name + "V0"

    return operation_id


def _updated_since(value: str | None) -> dt.datetime | None:
    """An RFC 3339 timestamp (a missing offset is read as UTC); anything else, ``null`` included, is a 400."""
    if value is None:
        return None
    parsed = None
    if _RFC3339.match(value):
        with contextlib.suppress(ValueError):
            parsed = dt.datetime.fromisoformat(value.upper())
    if parsed is None:
        raise BadRequest(
            f"updated_since must be an RFC 3339 timestamp such as 2025-01-01T00:00:00Z, not {value!r}",
            invalidParams=[{"name": "updated_since", "reason": "not an RFC 3339 timestamp"}],
        )
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def _name(segment: str) -> str:
    return unquote(segment)


def _response(found: dict[str, Any]) -> McpServerResponse:
    return msgspec.convert(found, McpServerResponse)


class McpRegistryController(Controller):
    tags = ["MCP Registry API"]
    exception_handlers = {kind: _mcp_error for kind in (RegistryError, ValidationException, HTTPException, Exception)}
    opt = documented(problem_media_type="application/json")

    @get(
        _paths("/servers"),
        operation_id=_operation("mcpListServers"),
        summary="List MCP servers (every published version)",
    )
    async def list_servers(
        self,
        request: Request[Any, Any, Any],
        conventions: NamedDependency[ConventionService],
        cursor: Annotated[str | None, QueryParameter(description="metadata.nextCursor of the previous page")] = None,
        limit: Annotated[int, QueryParameter(description="Page size (1 to 100)")] = DEFAULT_SERVER_PAGE,
        # Not "search": that name is the search service's dependency.
        name_search: Annotated[
            str | None, QueryParameter(name="search", description="Substring of the server name")
        ] = None,
        updated_since: Annotated[
            str | None, QueryParameter(description="Only versions updated since (RFC 3339)", format="date-time")
        ] = None,
        version: Annotated[str | None, QueryParameter(description="'latest' or an exact version")] = None,
        include_deleted: IncludeDeleted = False,
    ) -> McpServerList:
        since = _updated_since(updated_since)
        listing = ServerListing(cursor, limit, name_search, since, version, include_deleted)
        return msgspec.convert(await conventions.list_servers(listing, tenant_scope_of(request)), McpServerList)

    @get(
        _paths("/servers/{server_name:str}/versions"),
        operation_id=_operation("mcpServerVersions"),
        summary="Every version of an MCP server, newest first",
    )
    async def versions(
        self,
        request: Request[Any, Any, Any],
        server_name: FromPath[str],
        conventions: NamedDependency[ConventionService],
        include_deleted: IncludeDeleted = False,
    ) -> McpServerList:
        found = await conventions.server_versions(_name(server_name), include_deleted, tenant_scope_of(request))
        return msgspec.convert(found, McpServerList)

    @get(
        _paths("/servers/{server_name:str}/versions/{version:str}"),
        operation_id=_operation("mcpServerVersion"),
        summary="One version of an MCP server ('latest' for the latest)",
    )
    async def version(
        self,
        request: Request[Any, Any, Any],
        server_name: FromPath[str],
        version: FromPath[str],
        conventions: NamedDependency[ConventionService],
        include_deleted: IncludeDeleted = False,
    ) -> McpServerResponse:
        found = await conventions.server_version(
            _name(server_name), unquote(version), include_deleted, tenant_scope_of(request)
        )
        return _response(found)

    @delete(
        _paths("/servers/{server_name:str}/versions/{version:str}"),
        operation_id=_operation("mcpDeleteServerVersion"),
        summary="Mark a version deleted (it stays readable with include_deleted)",
        status_code=200,
    )
    async def delete_version(
        self,
        request: Request[Any, Any, Any],
        server_name: FromPath[str],
        version: FromPath[str],
        conventions: NamedDependency[ConventionService],
    ) -> McpServerResponse:
        updated = await conventions.set_status(
            _name(server_name), unquote(version), "deleted", principal=principal_of(request)
        )
        return _response(updated[0])

    @put(
        _paths("/servers/{server_name:str}/versions/{version:str}"),
        operation_id=_operation("mcpUpdateServerVersion"),
        summary="Edit a published version: not implemented (versions are immutable; publish a new one)",
        status_code=501,
        opt=documented(
            problems={501: "This registry does not support updates: publish a new version"},
            problem_media_type="application/json",
        ),
    )
    async def update_version(self) -> None:
        raise NotSupported("Updates are not supported by this registry: versions are immutable, publish a new one")

    @patch(
        _paths("/servers/{server_name:str}/versions/{version:str}/status"),
        operation_id=_operation("mcpUpdateServerVersionStatus"),
        summary="Change the lifecycle status of a version",
        status_code=200,
    )
    async def version_status(
        self,
        request: Request[Any, Any, Any],
        server_name: FromPath[str],
        version: FromPath[str],
        data: JSONBody[McpStatusUpdate],
        conventions: NamedDependency[ConventionService],
    ) -> McpServerResponse:
        updated = await conventions.set_status(
            _name(server_name), unquote(version), data.status, data.statusMessage, principal=principal_of(request)
        )
        return _response(updated[0])

    @patch(
        _paths("/servers/{server_name:str}/status"),
        operation_id=_operation("mcpUpdateServerStatus"),
        summary="Change the lifecycle status of every version",
        status_code=200,
    )
    async def server_status(
        self,
        request: Request[Any, Any, Any],
        server_name: FromPath[str],
        data: JSONBody[McpStatusUpdate],
        conventions: NamedDependency[ConventionService],
    ) -> McpAllVersionsStatus:
        updated = await conventions.set_status(
            _name(server_name), None, data.status, data.statusMessage, principal=principal_of(request)
        )
        return McpAllVersionsStatus(updatedCount=len(updated), servers=[_response(item) for item in updated])

    @post(
        _paths("/publish"),
        operation_id=_operation("mcpPublish"),
        summary="Publish a server.json (a new version)",
        status_code=200,
    )
    async def publish(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[dict[str, Any]],
        conventions: NamedDependency[ConventionService],
    ) -> McpServerResponse:
        return _response(await conventions.publish(data, principal=principal_of(request)))


__all__ = ["PREFIX", "McpRegistryController"]
