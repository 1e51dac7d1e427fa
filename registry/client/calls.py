"""The directory's HTTP API as requests and response parsers, shared by the async and the sync client.

Each operation is a ``Call``: the request to send and how to read its response. The clients only add I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import httpx_sse
import msgspec

from registry.client.errors import UnexpectedResponse, problem_from
from registry.client.models import (
    BatchResult,
    CompatibilityResult,
    Event,
    Facets,
    ImportedAgent,
    ImportedTool,
    Lease,
    Notice,
    Requirement,
    ResolveResult,
    SearchResult,
    SparqlResults,
    ThingSummary,
    VersionDetail,
    VersionList,
    WriteNotices,
    WriteResult,
)

T = TypeVar("T")

TD_JSON = "application/td+json"
MERGE_PATCH_JSON = "application/merge-patch+json"
EVENT_TYPES = ("thing_created", "thing_updated", "thing_deleted")
#: The LLM tool formats of import and export (registry/descriptions/tool_formats.py).
TOOL_FORMATS = ("openai", "anthropic", "mcp", "lmkit", "mojentic", "allos")
#: Orders of search results (registry/discovery/service.py SORTS).
SEARCH_SORTS = ("relevance", "title", "modified", "expires")


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


def _encode(document: Any) -> bytes:
    return msgspec.json.encode(document)


def _with_ttl(document: Mapping[str, Any], ttl: float | None) -> dict[str, Any]:
    result = dict(document)
    if ttl is not None:
        result["registration"] = {**(result.get("registration") or {}), "ttl": ttl}
    return result


def _if_match(etag: str | None) -> dict[str, str]:
    return {"If-Match": etag} if etag else {}


def register(document: Mapping[str, Any], ttl: float | None = None, *, create_only: bool = False) -> Call[WriteResult]:
    """Create or replace (PUT) a description with an id; POST an anonymous one (the directory assigns the id).

    ``create_only`` sends ``If-None-Match: *``: an existing description is not replaced (412, PreconditionFailed).
    """
    body = _encode(_with_ttl(document, ttl))
    thing_id = document.get("id")
    if isinstance(thing_id, str) and thing_id:
        headers = {"Content-Type": TD_JSON, **({"If-None-Match": "*"} if create_only else {})}
        return Call("PUT", thing_path(thing_id), _write_result(thing_id), headers=headers, content=body)
    return Call("POST", "/things", _write_result(None), headers={"Content-Type": TD_JSON}, content=body)


def register_batch(documents: Sequence[Mapping[str, Any]], ttl: float | None = None) -> Call[BatchResult]:
    """Create or replace many descriptions (each with its id) in one request; each item says how it went."""

    def parse(response: httpx.Response) -> BatchResult:
        return msgspec.json.decode(_checked(response).content, type=BatchResult)

    body = _encode([_with_ttl(document, ttl) for document in documents])
    return Call("POST", "/api/v1/things/batch", parse, headers={"Content-Type": "application/json"}, content=body)


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


def api_thing_path(thing_id: str, tail: str) -> str:
    return "/api/v1/things/" + quote(thing_id, safe="") + "/" + tail


def _decoded(result_type: type[T]) -> Callable[[httpx.Response], T]:
    def parse(response: httpx.Response) -> T:
        return msgspec.json.decode(_checked(response).content, type=result_type)

    return parse


def _given(**values: Any) -> dict[str, Any]:
    """Query parameters that were given (booleans as true/false)."""
    return {
        name: ("true" if value else "false") if isinstance(value, bool) else value
        for name, value in values.items()
        if value is not None
    }


def renew_lease(thing_id: str) -> Call[Lease]:
    return Call("POST", api_thing_path(thing_id, "lease"), _decoded(Lease))


def search(
    *,
    kind: str | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    capability_version: str | None = None,
    type_: str | None = None,
    q: str | None = None,
    sort: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    facets: bool = False,
    vendor_match: str | None = None,
    convention: str | None = None,
) -> Call[SearchResult]:
    params = _given(
        kind=kind,
        vendor=vendor,
        vendor_match=vendor_match,
        capability=capability,
        capability_version=capability_version,
        type=type_,
        q=q,
        sort=sort,
        limit=limit,
        cursor=cursor,
        facets=facets or None,
        convention=convention,
    )
    return Call("GET", "/api/v1/search", _decoded(SearchResult), params=params)


def facets(
    *,
    kind: str | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    capability_version: str | None = None,
    type_: str | None = None,
    q: str | None = None,
    convention: str | None = None,
) -> Call[Facets]:
    params = _given(
        kind=kind,
        vendor=vendor,
        capability=capability,
        capability_version=capability_version,
        type=type_,
        q=q,
        convention=convention,
    )
    return Call("GET", "/api/v1/facets", _decoded(Facets), params=params)


def summary(thing_id: str) -> Call[ThingSummary]:
    return Call("GET", api_thing_path(thing_id, "summary"), _decoded(ThingSummary))


def versions(thing_id: str, satisfies: str | None = None) -> Call[VersionList]:
    return Call("GET", api_thing_path(thing_id, "versions"), _decoded(VersionList), params=_given(satisfies=satisfies))


def version(thing_id: str, version: str) -> Call[VersionDetail]:
    path = api_thing_path(thing_id, "versions/" + quote(version, safe=""))
    return Call("GET", path, _decoded(VersionDetail))


SPARQL_RESULTS_JSON = "application/sparql-results+json"


def _sparql_call(query: str, accept: str, parse: Callable[[httpx.Response], T], post: bool) -> Call[T]:
    """SPARQL 1.1 protocol: the query in the URL (GET), or as the body (POST, for long queries)."""
    if post:
        headers = {"Accept": accept, "Content-Type": "application/sparql-query"}
        return Call("POST", "/search/sparql", parse, headers=headers, content=query.encode())
    return Call("GET", "/search/sparql", parse, params={"query": query}, headers={"Accept": accept})


def sparql(query: str, *, post: bool = False) -> Call[SparqlResults]:
    """A SELECT or ASK query; its answer in the SPARQL JSON results format."""

    def parse(response: httpx.Response) -> SparqlResults:
        _checked(response)
        media_type = response.headers.get("content-type", "").partition(";")[0].strip()
        if media_type not in (SPARQL_RESULTS_JSON, "application/json"):
            raise UnexpectedResponse(
                f"the directory answered with {media_type or 'no content type'}, not SPARQL results: "
                "CONSTRUCT and DESCRIBE queries give graphs, ask for them with sparql_graph()"
            )
        return msgspec.json.decode(response.content, type=SparqlResults)

    return _sparql_call(query, SPARQL_RESULTS_JSON, parse, post)


def sparql_graph(query: str, *, media_type: str = "text/turtle", post: bool = False) -> Call[str]:
    """A CONSTRUCT or DESCRIBE query; the graph serialised as ``media_type`` (text/turtle, application/ld+json,
    application/n-triples, ...)."""

    def parse(response: httpx.Response) -> str:
        return _checked(response).text

    return _sparql_call(query, media_type, parse, post)


def jsonpath(query: str) -> Call[list[Any]]:
    """An RFC 9535 query over the array of all descriptions; the matches, as a list."""
    return Call("GET", "/search/jsonpath", _decoded(list[Any]), params={"query": query})


def resolve(requirements: Sequence[Requirement | str | Mapping[str, Any]]) -> Call[ResolveResult]:
    """Requirements as ``Requirement``, a capability name or id (any version, highest), or a mapping sent as is."""
    body = [Requirement(item) if isinstance(item, str) else item for item in requirements]
    return Call(
        "POST",
        "/api/v1/resolve",
        _decoded(ResolveResult),
        headers={"Content-Type": "application/json"},
        content=_encode({"requirements": body}),
    )


def _compatibility(body: Mapping[str, Any]) -> Call[CompatibilityResult]:
    return Call(
        "POST",
        "/api/v1/compatibility",
        _decoded(CompatibilityResult),
        headers={"Content-Type": "application/json"},
        content=_encode(body),
    )


def compatibility(thing_id: str, from_version: str, to_version: str) -> Call[CompatibilityResult]:
    """Compare two kept versions of a description."""
    return _compatibility({"id": thing_id, "from": from_version, "to": to_version})


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> Call[CompatibilityResult]:
    """Compare two descriptions that need not be registered."""
    return _compatibility({"old": old, "new": new})


def import_tool(
    definition: Any,
    tool_format: str,
    *,
    thing_id: str | None = None,
    vendor: str | None = None,
    version: str | None = None,
    href: str | None = None,
) -> Call[ImportedTool]:
    def parse(response: httpx.Response) -> ImportedTool:
        return msgspec.json.decode(_checked(response).content, type=ImportedTool)

    params = _given(format=tool_format, id=thing_id, vendor=vendor, version=version, href=href)
    return Call(
        "POST",
        "/api/v1/tools/import",
        parse,
        params=params,
        headers={"Content-Type": "application/json"},
        content=_encode(definition),
    )


def import_card(card: Any, *, thing_id: str | None = None) -> Call[ImportedAgent]:
    def parse(response: httpx.Response) -> ImportedAgent:
        return msgspec.json.decode(_checked(response).content, type=ImportedAgent)

    return Call(
        "POST",
        "/api/v1/agents/import",
        parse,
        params=_given(format="a2a", id=thing_id),
        headers={"Content-Type": "application/json"},
        content=_encode(card),
    )


#: One tool definition, or a list of them.
Exported = dict[str, Any] | list[dict[str, Any]]


def export(thing_id: str, tool_format: str) -> Call[Exported]:
    """A tool as one definition (a dict); an agent, or a tool with several functions, as a list of them."""

    def parse(response: httpx.Response) -> Exported:
        exported: Exported = msgspec.json.decode(_checked(response).content, type=Exported)
        return exported

    return Call("GET", api_thing_path(thing_id, "export"), parse, params={"format": tool_format})


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


class Subscription:
    """An event subscription that remembers the last event received, so a reconnection resumes after it."""

    def __init__(
        self, event_type: str | None, *, diff: bool, filters: Mapping[str, str | None], last_event_id: int | None
    ) -> None:
        self.event_type = event_type
        self.diff = diff
        self.filters = filters
        self.last_event_id = last_event_id

    def request(self) -> tuple[str, dict[str, str], dict[str, str]]:
        return events_request(self.event_type, diff=self.diff, filters=self.filters, last_event_id=self.last_event_id)

    def receive(self, message: httpx_sse.ServerSentEvent) -> Event | None:
        event = event_from(message.event, message.id, message.data)
        if event is not None:
            self.last_event_id = event.seq
        return event


__all__ = [
    "EVENT_TYPES",
    "SEARCH_SORTS",
    "TOOL_FORMATS",
    "Call",
    "Exported",
    "Subscription",
    "api_thing_path",
    "compare",
    "compatibility",
    "delete",
    "event_from",
    "events_request",
    "export",
    "facets",
    "get",
    "import_tool",
    "jsonpath",
    "list_things",
    "patch",
    "register",
    "renew_lease",
    "replace",
    "resolve",
    "search",
    "sparql",
    "sparql_graph",
    "summary",
    "thing_path",
    "version",
    "versions",
]
