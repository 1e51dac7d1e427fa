"""A2A Agent Cards: import (``POST /api/v1/agents/import?format=a2a``) and each agent's card at
``/a2a/{id}/.well-known/agent-card.json``, where an A2A client given the base URL ``/a2a/{id}/`` resolves it (the
JavaScript SDK resolves the card path relative to the base URL, so the trailing slash keeps the id; the Python
SDK appends the path either way). The card carries an ``ETag`` (of its bytes) and ``Cache-Control: no-cache``: a
client may keep it and revalidate with ``If-None-Match`` (304 while it is unchanged)."""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_304_NOT_MODIFIED

from registry.conventions.service import ConventionService
from registry.descriptions.ids import as_uri
from registry.directory.service import DirectoryService
from registry.http.access import principal_of, tenant_scope_of
from registry.http.bodies import reject_unknown_parameters
from registry.http.contract import JSON_OBJECT, Answer, Param, documented, imported_answers
from registry.http.middleware.ids import thing_id_from
from registry.http.things import notice_headers
from registry.wire import ImportedAgent

AGENT_CARD_PATH = "/.well-known/agent-card.json"
#: Caches may keep a card but revalidate it before each use, so an edited or deleted card shows at once.
CARD_CACHE_CONTROL = "no-cache"
_CARD_HEADERS = {"ETag": "Entity tag of the card's bytes", "Cache-Control": CARD_CACHE_CONTROL}
IF_NONE_MATCH = Param(
    "If-None-Match", "Entity tags of cards the client holds (304 if one is current)", location="header"
)


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 §13.1.2: weak comparison of each listed tag; ``*`` matches any current representation."""
    if not if_none_match:
        return False
    tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    return "*" in tags or etag in tags


class A2AController(Controller):
    tags = ["A2A"]

    @post(
        "/api/v1/agents/import",
        operation_id="importAgent",
        summary="Store an A2A Agent Card as an lmos:Agent",
        opt=imported_answers("ImportedAgent"),
    )
    async def import_agent(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[dict[str, Any]],
        conventions: NamedDependency[ConventionService],
        card_format: Annotated[Literal["a2a"], QueryParameter(name="format", description="a2a (Agent Card)")],
        thing_id: Annotated[
            str | None, QueryParameter(name="id", description="Id of the description (default: from the card)")
        ] = None,
    ) -> Response[ImportedAgent]:
        reject_unknown_parameters(request, frozenset({"format", "id"}))
        imported = await conventions.import_card(data, thing_id, principal=principal_of(request))
        notices = notice_headers(imported.notices, conventions.directory.settings)
        headers = {"Location": as_uri(imported.location), **notices}
        return Response(imported, status_code=HTTP_201_CREATED if imported.created else HTTP_200_OK, headers=headers)

    @get(
        "/a2a/{thing_id:str}" + AGENT_CARD_PATH,
        operation_id="agentCard",
        summary="The A2A Agent Card of an agent (base URL /a2a/{id} for A2A card resolvers)",
        opt=documented(
            parameters=[IF_NONE_MATCH],
            answers={
                200: Answer("The Agent Card", {"application/json": JSON_OBJECT}, headers=_CARD_HEADERS),
                304: Answer("The card is unchanged since the entity tag given in If-None-Match", headers=_CARD_HEADERS),
            },
        ),
    )
    async def agent_card(
        self,
        thing_id: FromPath[str],
        request: Request[Any, Any, Any],
        conventions: NamedDependency[ConventionService],
        directory: NamedDependency[DirectoryService],
    ) -> Response[bytes]:
        await directory.require_visible(thing_id_from(thing_id), tenant_scope_of(request))
        content = msgspec.json.encode(await conventions.card(thing_id_from(thing_id)))
        etag = f'"{hashlib.sha256(content).hexdigest()[:32]}"'
        headers = {"ETag": etag, "Cache-Control": CARD_CACHE_CONTROL}
        if etag_matches(request.headers.get("if-none-match"), etag):
            return Response(content=b"", status_code=HTTP_304_NOT_MODIFIED, headers=headers)
        return Response(content=content, media_type="application/json", headers=headers)


__all__ = ["AGENT_CARD_PATH", "A2AController"]
