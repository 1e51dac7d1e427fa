"""Thing Descriptions (WoT Discovery ``/things``): register, replace, patch, delete, read, list, renew a lease."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import msgspec

from registry.client.calls.call import (
    MERGE_PATCH_JSON,
    TD_JSON,
    Call,
    Page,
    api_thing_path,
    checked,
    decoded,
    encode,
    given,
    json_body,
    json_of,
    nothing,
    thing_path,
)
from registry.client.models import BatchResult, Lease, Notice, WriteNotices, WriteResult


def _write_result(thing_id: str | None) -> Callable[[httpx.Response], WriteResult]:
    def parse(response: httpx.Response) -> WriteResult:
        checked(response)
        return WriteResult(
            id=thing_id or response.headers.get("location", ""),
            created=response.status_code == 201,
            etag=response.headers.get("etag"),
            notices=_notices(response),
        )

    return parse


def _notices(response: httpx.Response) -> list[Notice]:
    """All notices: from the body when the directory capped the header (``Registry-Notices-Total``)."""
    if "registry-notices-total" in response.headers and response.content:
        return msgspec.json.decode(response.content, type=WriteNotices).notices
    header = response.headers.get("registry-notices")
    return msgspec.json.decode(header, type=list[Notice]) if header else []


def _with_ttl(document: Mapping[str, Any], ttl: float | None) -> dict[str, Any]:
    result = dict(document)
    if ttl is not None:
        result["registration"] = {**(result.get("registration") or {}), "ttl": ttl}
    return result


def _if_match(etag: str | None) -> dict[str, str]:
    return {"If-Match": etag} if etag else {}


def register(document: Mapping[str, Any], *, ttl: float | None = None, create_only: bool = False) -> Call[WriteResult]:
    """Create or replace (PUT) a description with an id; POST an anonymous one (the directory assigns the id).

    ``ttl``: a lease of that many seconds (renew it with ``renew_lease``). ``create_only`` sends
    ``If-None-Match: *``: an existing description is not replaced (PreconditionFailedError).
    """
    body = encode(_with_ttl(document, ttl))
    thing_id = document.get("id")
    if isinstance(thing_id, str) and thing_id:
        headers = {"Content-Type": TD_JSON, **({"If-None-Match": "*"} if create_only else {})}
        return Call("PUT", thing_path(thing_id), _write_result(thing_id), headers=headers, content=body)
    return Call("POST", "/things", _write_result(None), headers={"Content-Type": TD_JSON}, content=body)


def register_batch(documents: Sequence[Mapping[str, Any]], *, ttl: float | None = None) -> Call[BatchResult]:
    """Create or replace up to 1,000 descriptions (each with its id) in one request and one transaction; each item
    of the result says how it went."""
    body = [_with_ttl(document, ttl) for document in documents]
    return Call("POST", "/api/v1/things/batch", decoded(BatchResult), **json_body(body))


def replace(document: Mapping[str, Any], *, ttl: float | None = None, if_match: str | None = None) -> Call[WriteResult]:
    """Replace the description with the document's id; ``if_match``: only if its ETag is still this one."""
    thing_id = document.get("id")
    if not isinstance(thing_id, str) or not thing_id:
        raise ValueError("replace needs a description with an id")
    headers = {"Content-Type": TD_JSON, **_if_match(if_match)}
    return Call(
        "PUT", thing_path(thing_id), _write_result(thing_id), headers=headers, content=encode(_with_ttl(document, ttl))
    )


def patch(thing_id: str, merge_patch: Mapping[str, Any], *, if_match: str | None = None) -> Call[WriteResult]:
    """Change a description with a JSON merge patch (RFC 7396)."""
    headers = {"Content-Type": MERGE_PATCH_JSON, **_if_match(if_match)}
    return Call("PATCH", thing_path(thing_id), _write_result(thing_id), headers=headers, content=encode(merge_patch))


def delete(thing_id: str, *, if_match: str | None = None) -> Call[None]:
    return Call("DELETE", thing_path(thing_id), nothing, headers=_if_match(if_match))


def get(thing_id: str) -> Call[dict[str, Any]]:
    """The enriched description."""
    return Call("GET", thing_path(thing_id), json_of)


def list_things(*, offset: int | None = None, limit: int | None = None) -> Call[list[dict[str, Any]]]:
    """One page of descriptions in code-point order of id (all of them without ``limit``); see ``iter_things``."""
    return Call("GET", "/things", json_of, params=given(offset=offset, limit=limit))


def _thing_page(response: httpx.Response) -> Page[dict[str, Any]]:
    """The descriptions, and the page the ``Link: rel="next"`` header names."""
    documents: list[dict[str, Any]] = json_of(response)
    following = response.links.get("next", {}).get("url")
    return Page(documents, None if following is None else Call("GET", following, _thing_page))


def iter_things(*, page_size: int = 100) -> Call[Page[dict[str, Any]]]:
    """Every description, fetched ``page_size`` at a time (following the listing's ``Link: rel="next"``)."""
    return Call("GET", "/things", _thing_page, params={"limit": page_size})


def renew_lease(thing_id: str) -> Call[Lease]:
    """Keep a registration with a ttl alive: expires = now + its ttl."""
    return Call("POST", api_thing_path(thing_id, "lease"), decoded(Lease), repeatable=True)
