"""The WoT Discovery Things API: ``/things`` CRUD and listing (W3C WoT Discovery §7.3.2.1)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import msgspec
from litestar import Controller, Request, Response, delete, get, patch, post, put
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Stream
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from registry.config import Settings
from registry.descriptions.model import DISCOVERY_CONTEXT
from registry.directory.service import DirectoryService, WriteOutcome
from registry.errors import BadRequest
from registry.http.bodies import (
    LD_JSON,
    MERGE_PATCH_JSON,
    TD_JSON,
    TD_MEDIA_TYPES,
    read_json,
    reject_unknown_parameters,
)
from registry.http.ids import thing_id_from
from registry.wire import Notice

LIST_PARAMETERS = frozenset({"offset", "limit", "format"})


def notice_headers(notices: list[Notice]) -> dict[str, str]:
    """Notices travel in a header because 204 responses have no body."""
    if not notices:
        return {}
    return {"Registry-Notices": msgspec.json.encode(notices).decode()}


def _write_response(outcome: WriteOutcome, *, location: bool = False) -> Response[bytes]:
    headers = {"ETag": outcome.stored.etag, **notice_headers(outcome.notices)}
    if location:
        # The bare local id, as LinkSmart and Domus do: clients resolve it against /things/.
        headers["Location"] = outcome.stored.id
    status = HTTP_201_CREATED if outcome.created else HTTP_204_NO_CONTENT
    return Response(content=b"", status_code=status, headers=headers, media_type=None)


#: PostgreSQL's OFFSET is a bigint; larger values would fail after the response has started streaming.
MAX_OFFSET = 2**63 - 1


def _parse_non_negative(name: str, raw: str | None, *, minimum: int) -> int | None:
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if not minimum <= value <= MAX_OFFSET:
        raise BadRequest(
            f"Query parameter {name} must be an integer from {minimum} to {MAX_OFFSET}, got {raw!r}",
            invalidParams=[{"name": name, "reason": f"must be an integer from {minimum} to {MAX_OFFSET}"}],
        )
    return value


class ThingsController(Controller):
    path = "/things"
    tags = ["Things (WoT Discovery)"]

    @get("/", operation_id="listThings", summary="List Thing Descriptions", media_type=LD_JSON)
    async def list_things(
        self,
        request: Request[Any, Any, Any],
        directory: NamedDependency[DirectoryService],
        settings: NamedDependency[Settings],
    ) -> Stream:
        """All descriptions in Unicode code-point order of id, streamed; paged when ``limit`` is given."""
        reject_unknown_parameters(request, LIST_PARAMETERS)
        params = request.query_params
        offset = _parse_non_negative("offset", params.get("offset"), minimum=0) or 0
        limit = _parse_non_negative("limit", params.get("limit"), minimum=1)
        payload_format = params.get("format", "array")
        if payload_format not in {"array", "collection"}:
            raise BadRequest(
                f"Query parameter format must be 'array' or 'collection', got {payload_format!r}",
                invalidParams=[{"name": "format", "reason": "must be array or collection"}],
            )
        if limit is not None:
            limit = min(limit, settings.max_page_size)
        total = await directory.things.count()
        version = await directory.things.latest_seq()
        links = [f'</things>; rel="canonical"; etag="v{version}"']

        def page_url(page_offset: int) -> str:
            query: dict[str, Any] = {"offset": page_offset, "limit": limit}
            if payload_format == "collection":
                query["format"] = "collection"
            return "/things?" + urlencode(query)

        next_url = None
        if limit is not None and offset + limit < total:
            next_url = page_url(offset + limit)
            links.insert(0, f'<{next_url}>; rel="next"')

        async def body() -> AsyncIterator[bytes]:
            retrieved = dt.datetime.now(dt.UTC)
            if payload_format == "collection":
                head: dict[str, Any] = {
                    "@context": DISCOVERY_CONTEXT,
                    "@type": "ThingCollection",
                    "total": total,
                }
                if limit is not None:
                    head["@id"] = page_url(offset)
                    if next_url:
                        head["next"] = next_url
                yield msgspec.json.encode(head)[:-1] + b',"members":['
            else:
                yield b"["
            first = True
            async for stored in directory.things.stream(offset=offset, limit=limit):
                document = directory.enriched_json(stored, retrieved)
                yield document if first else b"," + document
                first = False
            yield b"]}" if payload_format == "collection" else b"]"

        return Stream(body(), media_type=LD_JSON, status_code=HTTP_200_OK, headers={"Link": ", ".join(links)})

    @post("/", operation_id="createAnonymousThing", summary="Register an anonymous Thing Description")
    async def create_anonymous(
        self, request: Request[Any, Any, Any], directory: NamedDependency[DirectoryService]
    ) -> Response[bytes]:
        document = await read_json(request, TD_MEDIA_TYPES)
        outcome = await directory.create_anonymous(document)
        return _write_response(outcome, location=True)

    @get("/{thing_id:str}", operation_id="retrieveThing", summary="Retrieve a Thing Description")
    async def retrieve(self, thing_id: FromPath[str], directory: NamedDependency[DirectoryService]) -> Response[bytes]:
        stored = await directory.get(thing_id_from(thing_id))
        return Response(
            content=directory.enriched_json(stored),
            media_type=TD_JSON,
            headers={"ETag": stored.etag},
        )

    @put(
        "/{thing_id:str}",
        operation_id="createOrUpdateThing",
        summary="Create or replace a Thing Description",
    )
    async def create_or_replace(
        self, thing_id: FromPath[str], request: Request[Any, Any, Any], directory: NamedDependency[DirectoryService]
    ) -> Response[bytes]:
        document = await read_json(request, TD_MEDIA_TYPES)
        outcome = await directory.put(thing_id_from(thing_id), document, if_match=request.headers.get("if-match"))
        return _write_response(outcome)

    @patch("/{thing_id:str}", operation_id="partiallyUpdateThing", summary="Merge-patch a Thing Description")
    async def partially_update(
        self, thing_id: FromPath[str], request: Request[Any, Any, Any], directory: NamedDependency[DirectoryService]
    ) -> Response[bytes]:
        merge_patch = await read_json(request, (MERGE_PATCH_JSON,))
        outcome = await directory.patch(thing_id_from(thing_id), merge_patch, if_match=request.headers.get("if-match"))
        return _write_response(outcome)

    @delete("/{thing_id:str}", operation_id="deleteThing", summary="Delete a Thing Description", status_code=204)
    async def remove(
        self, thing_id: FromPath[str], request: Request[Any, Any, Any], directory: NamedDependency[DirectoryService]
    ) -> None:
        await directory.delete(thing_id_from(thing_id), if_match=request.headers.get("if-match"))
