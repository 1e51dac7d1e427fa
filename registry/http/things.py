"""The WoT Discovery Things API: ``/things`` CRUD and listing (W3C WoT Discovery §7.3.2.1)."""

from __future__ import annotations

import datetime as dt
import json
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
from registry.descriptions.ids import as_uri, position_problem
from registry.descriptions.model import DISCOVERY_CONTEXT
from registry.directory.service import DirectoryService, Window, WriteOutcome
from registry.errors import BadRequest
from registry.http.access import principal_of, tenant_scope_of
from registry.http.bodies import (
    EMPTY,
    JSON,
    LD_JSON,
    MERGE_PATCH_JSON,
    TD_JSON,
    TD_MEDIA_TYPES,
    JsonLimits,
    read_json,
    reject_unknown_parameters,
)
from registry.http.contract import (
    ETAG,
    IF_MATCH,
    MERGE_PATCH,
    NOTICES,
    Answer,
    Body,
    Param,
    documented,
    ref,
    seed_example,
)
from registry.http.middleware.ids import thing_id_from
from registry.wire import Notice, WriteNotices

LIST_PARAMETERS = frozenset({"offset", "limit", "after", "format"})
NOTICES_TOTAL = "Registry-Notices-Total"

# -- the contract of these operations (see registry/http/contract.py)

_TD_BODY = Body(
    {media: ref("ThingDescription") for media in TD_MEDIA_TYPES},
    "The Thing Description; an LMOS agent or tool is one with @type lmos:Agent or lmos:Tool",
    examples={"weatherAgent": seed_example("weather-agent.td.json"), "tool": seed_example("seed-tool.td.json")},
)
_WRITTEN = {"ETag": ETAG, "Registry-Notices": f"{NOTICES}; absent if none"}
_CAPPED = {
    **_WRITTEN,
    NOTICES_TOTAL: "How many notices there are, when the Registry-Notices header holds fewer: the body has them all",
}
#: A write answers with an empty body (``application/x-empty``), unless its notices do not all fit in the header
#: (more than REGISTRY_MAX_NOTICE_HEADER_COUNT, or longer than REGISTRY_MAX_NOTICE_HEADER_BYTES): then the body
#: holds them all, and a replacement answers 200 rather than 204.
_NO_BODY = {"type": "string", "maxLength": 0}
_NOTICES = {JSON: ref("WriteNotices")}
_CREATED = Answer(
    "Registered; with every notice in the body when they do not all fit in the Registry-Notices header",
    {EMPTY: _NO_BODY, **_NOTICES},
    headers=_CAPPED,
)
_REPLACED = Answer("Replaced (or patched); no notice, or every one in the Registry-Notices header", headers=_WRITTEN)
_REPLACED_WITH_NOTICES = Answer(
    "Replaced (or patched), with notices that do not all fit in the Registry-Notices header: every one in the body",
    _NOTICES,
    headers=_CAPPED,
)
_PRECONDITION = {412: "If-Match was given and the stored description has another entity tag (or none)"}
_RACE = {409: "A concurrent write of the same id won; retry"}
_THING_COLLECTION = {
    "type": "object",
    "description": "WoT Discovery ThingCollection (format=collection)",
    "required": ["@context", "@type", "total", "members"],
    "properties": {
        "@context": {},
        "@type": {"const": "ThingCollection"},
        "total": {"type": "integer"},
        "@id": {"type": "string"},
        "next": {"type": "string"},
        "members": {"type": "array", "items": ref("EnrichedThingDescription")},
    },
}
_LISTING = documented(
    parameters=[
        Param("offset", "Skip this many descriptions (code-point order of id)", {"type": "integer", "minimum": 0}),
        Param(
            "limit",
            "At most this many (capped by REGISTRY_MAX_PAGE_SIZE); a Link rel=next follows",
            {"type": "integer", "minimum": 1},
        ),
        Param(
            "after",
            "Start past this id (the next links carry it): the page then holds the descriptions whose id follows it, "
            "offset only numbering them; a page past an id costs the same deep in the listing as at its start",
            {"type": "string", "minLength": 1},
        ),
        Param("format", "array (default) or a ThingCollection object", {"enum": ["array", "collection"]}),
    ],
    answers={
        200: Answer(
            "The enriched descriptions, in code-point order of id",
            {LD_JSON: {"oneOf": [{"type": "array", "items": ref("EnrichedThingDescription")}, _THING_COLLECTION]}},
            headers={"Link": "rel=next for the next page (with limit), rel=canonical with the listing's etag"},
        )
    },
)


def _ascii_json(notices: list[Notice]) -> str:
    """ASCII JSON (non-ASCII escaped as ``\\uXXXX``): header values are Latin-1 on the wire and JSON decoders read
    the escapes back."""
    return json.dumps(msgspec.to_builtins(notices), ensure_ascii=True, separators=(",", ":"))


def notice_headers(notices: list[Notice], settings: Settings) -> dict[str, str]:
    """Notices travel in a header because 204 responses have no body. The header is capped in count and bytes
    (proxies and clients refuse long headers); ``Registry-Notices-Total`` says when some did not fit."""
    if not notices:
        return {}
    shown = notices[: settings.max_notice_header_count]
    value = _ascii_json(shown)
    while shown and len(value) > settings.max_notice_header_bytes:
        shown = shown[: len(shown) // 2]
        value = _ascii_json(shown)
    headers = {"Registry-Notices": value} if shown else {}
    if len(shown) < len(notices):
        headers[NOTICES_TOTAL] = str(len(notices))
    return headers


def _write_response(outcome: WriteOutcome, settings: Settings, *, location: bool = False) -> Response[bytes]:
    headers = {"ETag": outcome.stored.etag, **notice_headers(outcome.notices, settings)}
    if location:
        # The bare local id, as LinkSmart and Domus do: clients resolve it against /things/.
        headers["Location"] = as_uri(outcome.stored.id)
    if NOTICES_TOTAL in headers:
        # A replacement answers 200 rather than 204 here, because 204 cannot carry the full list.
        status = HTTP_201_CREATED if outcome.created else HTTP_200_OK
        body = msgspec.json.encode(WriteNotices(outcome.notices))
        return Response(content=body, status_code=status, headers=headers, media_type=JSON)
    status = HTTP_201_CREATED if outcome.created else HTTP_204_NO_CONTENT
    return empty_answer(status, headers)


def empty_answer(status: int, headers: dict[str, str]) -> Response[bytes]:
    """A write's answer without a body: ``Content-Type: application/x-empty``, the response media type the
    directory's TD declares for it (a TD-driven client checks the answer against the form; without the header
    Litestar would send ``application/json`` with nothing to parse)."""
    return Response(content=b"", status_code=status, headers={**headers, "Content-Type": EMPTY}, media_type=EMPTY)


def _create_only(request: Request[Any, Any, Any]) -> bool:
    """``If-None-Match: *`` on PUT: create, never replace (RFC 9110 §13.1.2); other entity tags are not supported."""
    value = request.headers.get("if-none-match")
    if value is None:
        return False
    if value.strip() != "*":
        raise BadRequest("If-None-Match on PUT supports only * (create only, 412 if the id exists)")
    return True


#: Bytes of descriptions a listing sends at once: each send passes every middleware and the server's framing,
#: which cost more than serving a description when sent one by one.
LISTING_CHUNK_BYTES = 64 * 1024
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


def _parse_after(raw: str | None) -> str | None:
    """The id a page starts past: any text an id could be (an id that is not stored is a position between two
    that are)."""
    if raw is None:
        return None
    problem = position_problem(raw) if raw else "it is empty"
    if problem is not None:
        reason = f"must be the id a page starts past, as the next link gives it ({problem})"
        raise BadRequest(f"Query parameter after {reason}", invalidParams=[{"name": "after", "reason": reason}])
    return raw


class ThingsController(Controller):
    path = "/things"
    tags = ["Things (WoT Discovery)"]

    @get("/", operation_id="listThings", summary="List Thing Descriptions", media_type=LD_JSON, opt=_LISTING)
    async def list_things(
        self,
        request: Request[Any, Any, Any],
        directory: NamedDependency[DirectoryService],
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
            limit = min(limit, directory.settings.max_page_size)
        after = _parse_after(params.get("after"))
        # With ``after`` the page seeks to it and ``offset`` only numbers the page; the next link carries both,
        # so a client that follows it pages by key and one that computes offsets still gets its pages.
        window = Window(after=after or "", offset=0 if after else offset, limit=limit)
        # The exact total only where it is shown (a collection); a page of the array format needs only to know
        # whether another follows.
        head, rows = await directory.listing(tenant_scope_of(request), window, counted=payload_format == "collection")
        links = [f'</things>; rel="canonical"; etag="v{head.version}"']

        def page_url(page_offset: int, page_after: str | None) -> str:
            query: dict[str, Any] = {"offset": page_offset, "limit": limit}
            if page_after:
                query["after"] = page_after
            if payload_format == "collection":
                query["format"] = "collection"
            return "/things?" + urlencode(query)

        next_url = None
        if limit is not None and head.more:
            next_url = page_url(offset + limit, head.last)
            links.insert(0, f'<{next_url}>; rel="next"')

        async def body() -> AsyncIterator[bytes]:
            if payload_format == "collection":
                collection: dict[str, Any] = {
                    "@context": DISCOVERY_CONTEXT,
                    "@type": "ThingCollection",
                    "total": head.total,
                }
                if limit is not None:
                    collection["@id"] = page_url(offset, after)
                    if next_url:
                        collection["next"] = next_url
                chunk = [msgspec.json.encode(collection)[:-1] + b',"members":[']
            else:
                chunk = [b"["]
            held, first = 0, True
            retrieved = dt.datetime.now(dt.UTC)
            try:
                async for stored in rows:
                    document = directory.enriched_json(stored, retrieved)
                    if not first:
                        chunk.append(b",")
                    chunk.append(document)
                    held, first = held + len(document), False
                    if held >= LISTING_CHUNK_BYTES:
                        yield b"".join(chunk)
                        chunk, held = [], 0
            finally:
                await rows.aclose()
            chunk.append(b"]}" if payload_format == "collection" else b"]")
            yield b"".join(chunk)

        return Stream(body(), media_type=LD_JSON, status_code=HTTP_200_OK, headers={"Link": ", ".join(links)})

    @post(
        "/",
        operation_id="createAnonymousThing",
        summary="Register an anonymous Thing Description",
        opt=documented(
            body=_TD_BODY,
            answers={
                201: Answer(
                    "Registered under a new urn:uuid id; with every notice in the body when they do not all fit in "
                    "the Registry-Notices header",
                    _CREATED.content,
                    headers={**_CAPPED, "Location": "The id given to it"},
                )
            },
            problems=_RACE,
        ),
    )
    async def create_anonymous(
        self,
        request: Request[Any, Any, Any],
        directory: NamedDependency[DirectoryService],
    ) -> Response[bytes]:
        document = await read_json(request, TD_MEDIA_TYPES, JsonLimits.of(directory.settings))
        outcome = await directory.create_anonymous(document, principal=principal_of(request))
        return _write_response(outcome, directory.settings, location=True)

    @get(
        "/{thing_id:str}",
        operation_id="retrieveThing",
        summary="Retrieve a Thing Description",
        opt=documented(
            answers={
                200: Answer(
                    "The description with its registration information",
                    {TD_JSON: ref("EnrichedThingDescription")},
                    headers={"ETag": _WRITTEN["ETag"]},
                )
            }
        ),
    )
    async def retrieve(
        self, thing_id: FromPath[str], request: Request[Any, Any, Any], directory: NamedDependency[DirectoryService]
    ) -> Response[bytes]:
        served, etag = await directory.served(thing_id_from(thing_id), tenant_scope_of(request))
        return Response(content=served, media_type=TD_JSON, headers={"ETag": etag})

    @put(
        "/{thing_id:str}",
        operation_id="createOrUpdateThing",
        summary="Create or replace a Thing Description",
        opt=documented(
            body=_TD_BODY,
            parameters=[IF_MATCH],
            answers={200: _REPLACED_WITH_NOTICES, 201: _CREATED, 204: _REPLACED},
            problems={**_PRECONDITION, **_RACE},
        ),
    )
    async def create_or_replace(
        self,
        thing_id: FromPath[str],
        request: Request[Any, Any, Any],
        directory: NamedDependency[DirectoryService],
    ) -> Response[bytes]:
        create_only = _create_only(request)
        document = await read_json(request, TD_MEDIA_TYPES, JsonLimits.of(directory.settings))
        outcome = await directory.put(
            thing_id_from(thing_id),
            document,
            if_match=request.headers.get("if-match"),
            principal=principal_of(request),
            create_only=create_only,
        )
        return _write_response(outcome, directory.settings)

    @patch(
        "/{thing_id:str}",
        operation_id="partiallyUpdateThing",
        summary="Merge-patch a Thing Description",
        opt=documented(
            body=Body(
                {MERGE_PATCH_JSON: MERGE_PATCH},
                "The merge patch; the patched description must still be valid",
                examples={"retitle": {"title": "WeatherAgent 2", "description": None}},
            ),
            parameters=[IF_MATCH],
            answers={200: _REPLACED_WITH_NOTICES, 204: _REPLACED},
            problems=_PRECONDITION,
        ),
    )
    async def partially_update(
        self,
        thing_id: FromPath[str],
        request: Request[Any, Any, Any],
        directory: NamedDependency[DirectoryService],
    ) -> Response[bytes]:
        merge_patch = await read_json(request, (MERGE_PATCH_JSON,), JsonLimits.of(directory.settings))
        outcome = await directory.patch(
            thing_id_from(thing_id),
            merge_patch,
            if_match=request.headers.get("if-match"),
            principal=principal_of(request),
        )
        return _write_response(outcome, directory.settings)

    @delete(
        "/{thing_id:str}",
        operation_id="deleteThing",
        summary="Delete a Thing Description",
        status_code=204,
        opt=documented(parameters=[IF_MATCH], answers={204: Answer("Deleted")}, problems=_PRECONDITION),
    )
    async def remove(
        self, thing_id: FromPath[str], request: Request[Any, Any, Any], directory: NamedDependency[DirectoryService]
    ) -> Response[None]:
        await directory.delete(
            thing_id_from(thing_id), if_match=request.headers.get("if-match"), principal=principal_of(request)
        )
        return Response(content=None, status_code=HTTP_204_NO_CONTENT, headers={"Content-Type": EMPTY})
