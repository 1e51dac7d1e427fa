"""The directory's HTTP API as requests and response parsers, shared by the async and the sync client.

Each operation is a ``Call``: the request to send and how to read its response. The clients only add I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from registry.client.errors import problem_from
from registry.client.models import Event, Lease, Notice, SearchPage, WriteResult

T = TypeVar("T")

TD_JSON = "application/td+json"
MERGE_PATCH_JSON = "application/merge-patch+json"
EVENT_TYPES = ("thing_created", "thing_updated", "thing_deleted")
EXPORT_FORMATS = ("openai", "anthropic", "mcp", "lmkit", "mojentic", "allos")


@dataclasses.dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Mapping[str, Any] | None = None
    headers: Mapping[str, str] | None = None
    content: bytes | None = None

    def request(self, http: httpx.AsyncClient | httpx.Client) -> httpx.Request:
        return http.build_request(
            self.method, self.path, params=self.params, headers=self.headers, content=self.content
        )


def thing_path(thing_id: str) -> str:
    return "/things/" + quote(thing_id, safe="")


def _checked(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 400:
        raise problem_from(response)
    return response


def _json(response: httpx.Response) -> Any:
    return _checked(response).json()


def _nothing(response: httpx.Response) -> None:
    _checked(response)


def _write_result(thing_id: str | None) -> Callable[[httpx.Response], WriteResult]:
    def parse(response: httpx.Response) -> WriteResult:
        _checked(response)
        notices_header = response.headers.get("registry-notices")
        notices = msgspec.json.decode(notices_header, type=list[Notice]) if notices_header else []
        return WriteResult(
            id=thing_id or response.headers.get("location", ""),
            created=response.status_code == 201,
            etag=response.headers.get("etag"),
            notices=notices,
        )

    return parse


def _encode(document: Any) -> bytes:
    return msgspec.json.encode(document)


def _with_ttl(document: Mapping[str, Any], ttl: float | None) -> dict[str, Any]:
    result = dict(document)
    if ttl is not None:
        result["registration"] = {**(result.get("registration") or {}), "ttl": ttl}
    return result


def _if_match(etag: str | None) -> dict[str, str]:
    return {"If-Match": etag} if etag else {}


def register(document: Mapping[str, Any], ttl: float | None = None) -> Call[WriteResult]:
    """Create or replace (PUT) a description with an id; POST an anonymous one (the directory assigns the id)."""
    body = _encode(_with_ttl(document, ttl))
    thing_id = document.get("id")
    if isinstance(thing_id, str) and thing_id:
        return Call(
            "PUT", thing_path(thing_id), _write_result(thing_id), headers={"Content-Type": TD_JSON}, content=body
        )
    return Call("POST", "/things", _write_result(None), headers={"Content-Type": TD_JSON}, content=body)


def replace(document: Mapping[str, Any], *, ttl: float | None = None, if_match: str | None = None) -> Call[WriteResult]:
    thing_id = document.get("id")
    if not isinstance(thing_id, str) or not thing_id:
        raise ValueError("replace needs a description with an id")
    headers = {"Content-Type": TD_JSON, **_if_match(if_match)}
    return Call(
        "PUT", thing_path(thing_id), _write_result(thing_id), headers=headers, content=_encode(_with_ttl(document, ttl))
    )


def patch(thing_id: str, merge_patch: Mapping[str, Any], *, if_match: str | None = None) -> Call[WriteResult]:
    headers = {"Content-Type": MERGE_PATCH_JSON, **_if_match(if_match)}
    return Call("PATCH", thing_path(thing_id), _write_result(thing_id), headers=headers, content=_encode(merge_patch))


def delete(thing_id: str, *, if_match: str | None = None) -> Call[None]:
    return Call("DELETE", thing_path(thing_id), _nothing, headers=_if_match(if_match))


def get(thing_id: str) -> Call[dict[str, Any]]:
    return Call("GET", thing_path(thing_id), _json)


def list_things(*, offset: int | None = None, limit: int | None = None) -> Call[list[dict[str, Any]]]:
    params = {name: value for name, value in (("offset", offset), ("limit", limit)) if value is not None}
    return Call("GET", "/things", _json, params=params)


def renew_lease(thing_id: str) -> Call[Lease]:
    def parse(response: httpx.Response) -> Lease:
        return msgspec.json.decode(_checked(response).content, type=Lease)

    return Call("POST", "/api/v1/things/" + quote(thing_id, safe="") + "/lease", parse)


def search(
    *,
    kind: str | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    capability_version: str | None = None,
    q: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[SearchPage]:
    given = {
        "kind": kind,
        "vendor": vendor,
        "capability": capability,
        "capability_version": capability_version,
        "q": q,
        "limit": limit,
        "cursor": cursor,
    }

    def parse(response: httpx.Response) -> SearchPage:
        body = _json(response)
        if isinstance(body, list):
            return SearchPage(items=body)
        return SearchPage(items=list(body.get("items", [])), next_cursor=body.get("next_cursor"))

    return Call("GET", "/api/v1/search", parse, params={k: v for k, v in given.items() if v is not None})


def sparql(query: str, *, post: bool = False) -> Call[Any]:
    """SPARQL 1.1 protocol; SELECT/ASK give JSON results, CONSTRUCT/DESCRIBE whatever the server sends."""
    headers = {"Accept": "application/sparql-results+json, application/ld+json;q=0.9, */*;q=0.1"}

    def parse(response: httpx.Response) -> Any:
        _checked(response)
        kind = response.headers.get("content-type", "")
        return response.json() if "json" in kind else response.text

    if post:
        headers["Content-Type"] = "application/sparql-query"
        return Call("POST", "/search/sparql", parse, headers=headers, content=query.encode())
    return Call("GET", "/search/sparql", parse, params={"query": query}, headers=headers)


def jsonpath(query: str) -> Call[Any]:
    return Call("GET", "/search/jsonpath", _json, params={"query": query})


def resolve(requirements: Sequence[Mapping[str, Any]]) -> Call[Any]:
    """Requirements: ``{"capability": …, "range": …, "strategy": …}`` each."""
    body = _encode({"requirements": list(requirements)})
    return Call("POST", "/api/v1/resolve", _json, headers={"Content-Type": "application/json"}, content=body)


def compatibility(thing_id: str, from_version: str, to_version: str) -> Call[Any]:
    body = _encode({"id": thing_id, "from": from_version, "to": to_version})
    return Call("POST", "/api/v1/compatibility", _json, headers={"Content-Type": "application/json"}, content=body)


def export(thing_id: str, tool_format: str) -> Call[Any]:
    path = "/api/v1/things/" + quote(thing_id, safe="") + "/export"
    return Call("GET", path, _json, params={"format": tool_format})


def events_request(
    event_type: str | None, *, diff: bool, filters: Mapping[str, str | None], last_event_id: int | None
) -> tuple[str, dict[str, str], dict[str, str]]:
    """(path, params, headers) of an event subscription."""
    if event_type is not None and event_type not in EVENT_TYPES:
        raise ValueError(f"event type must be one of {', '.join(EVENT_TYPES)}, not {event_type!r}")
    params = {name: value for name, value in filters.items() if value is not None}
    if diff:
        params["diff"] = "true"
    headers = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    return ("/events" + (f"/{event_type}" if event_type else "")), params, headers


def event_from(kind: str, event_id: str, data: str) -> Event | None:
    """An SSE message as an Event; None for messages that are not change events."""
    if kind not in EVENT_TYPES or not event_id:
        return None
    return Event(type=kind, seq=int(event_id), data=msgspec.json.decode(data) if data else {})


__all__ = [
    "EVENT_TYPES",
    "EXPORT_FORMATS",
    "Call",
    "compatibility",
    "delete",
    "event_from",
    "events_request",
    "export",
    "get",
    "jsonpath",
    "list_things",
    "patch",
    "register",
    "renew_lease",
    "replace",
    "resolve",
    "search",
    "sparql",
    "thing_path",
]
