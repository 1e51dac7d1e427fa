"""A2A Agent Cards: import (``POST /api/v1/agents/import?format=a2a``) and each agent's card at
``/a2a/{id}/.well-known/agent-card.json``, where an A2A client given the base URL ``/a2a/{id}`` resolves it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED

from registry.conventions.service import ConventionService
from registry.descriptions.ids import as_uri
from registry.directory.service import DirectoryService
from registry.http.access import principal_of, require_visible
from registry.http.bodies import reject_unknown_parameters
from registry.http.contract import JSON_OBJECT, Answer, documented, imported_answers
from registry.http.ids import thing_id_from
from registry.http.things import notice_headers
from registry.wire import ImportedAgent

AGENT_CARD_PATH = "/.well-known/agent-card.json"


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
        headers = {"Location": as_uri(imported.location), **notice_headers(imported.notices)}
        return Response(imported, status_code=HTTP_201_CREATED if imported.created else HTTP_200_OK, headers=headers)

    @get(
        "/a2a/{thing_id:str}" + AGENT_CARD_PATH,
        operation_id="agentCard",
        summary="The A2A Agent Card of an agent (base URL /a2a/{id} for A2A card resolvers)",
        opt=documented(answers={200: Answer("The Agent Card", {"application/json": JSON_OBJECT})}),
    )
    async def agent_card(
        self,
        thing_id: FromPath[str],
        request: Request[Any, Any, Any],
        conventions: NamedDependency[ConventionService],
        directory: NamedDependency[DirectoryService],
    ) -> Response[bytes]:
        await require_visible(request, directory.things, thing_id_from(thing_id))
        card = await conventions.card(thing_id_from(thing_id))
        return Response(content=msgspec.json.encode(card), media_type="application/json")


__all__ = ["AGENT_CARD_PATH", "A2AController"]
