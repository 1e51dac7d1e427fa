"""The directory's HTTP API described once, for the async and the blocking client alike.

Each operation is a function that builds a ``Call``: the request to send and how to read its response. A paged
listing is a ``Call`` whose answer is a ``Page`` that carries the ``Call`` of the next page; an event
subscription is a ``Subscription``. The clients (registry/client/clients.py) only add I/O: the parameters, names
and docstrings of their methods are these functions'.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import httpx_sse
import msgspec

from registry.client.errors import ProblemError, UnexpectedResponse, problem_from
from registry.client.models import (
    BatchResult,
    CompatibilityResult,
    Event,
    Facets,
    Findings,
    ImportedAgent,
    ImportedTool,
    Lease,
    Notice,
    RecentChanges,
    Requirement,
    ResolveResult,
    SearchItem,
    SearchResult,
    SparqlResults,
    ThingSummary,
    VersionDetail,
    VersionInfo,
    VersionList,
    WriteNotices,
    WriteResult,
)
from registry.client.vocabulary import (
    EVENT_TYPES,
    SEARCH_SORTS,
    TOOL_FORMATS,
    Convention,
    EventType,
    ExportFormat,
    GraphMediaType,
    Kind,
    SearchSort,
    ToolFormat,
    VendorMatch,
)

T = TypeVar("T")
Result = TypeVar("Result")
Item = TypeVar("Item")

TD_JSON = "application/td+json"
MERGE_PATCH_JSON = "application/merge-patch+json"


#: Methods whose request may be sent twice with the effect of once (RFC 9110, 9.2.2).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
#: Failures of a request on a connection the server closed before answering: a kept-alive connection it closed
#: after its idle timeout just as the request went out (it read nothing, or nothing it acted on).
CLOSED_BEFORE_ANSWER = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


@dataclasses.dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and how to read its answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Mapping[str, Any] | None = None
    headers: Mapping[str, str] | None = None
    content: bytes | None = None
    #: A POST that may be sent twice with the effect of once (a lease renewal, a query); other methods by RFC 9110.
    repeatable: bool = False

    def retried_after(self, error: httpx.TransportError) -> bool:
        """Whether the request is sent once more after ``error``: an idempotent one whose connection the server
        closed before answering. A POST that creates something never is (it may have been acted on)."""
        return (self.repeatable or self.method in IDEMPOTENT_METHODS) and isinstance(error, CLOSED_BEFORE_ANSWER)

    def request(self, http: httpx.AsyncClient | httpx.Client) -> httpx.Request:
        return http.build_request(
            self.method, self.path, params=self.params, headers=self.headers, content=self.content
        )

    def reading(self, parse: Callable[[httpx.Response], Result]) -> Call[Result]:
        """The same request, its answer read by ``parse``."""
        return Call(self.method, self.path, parse, self.params, self.headers, self.content)


@dataclasses.dataclass(frozen=True, slots=True)
class Page(Generic[Item]):
    """One page of a listing, and the call that fetches the next one (None on the last page)."""

    items: Sequence[Item]
    next: Call[Page[Item]] | None


def thing_path(thing_id: str) -> str:
    return "/things/" + quote(thing_id, safe="")


def api_thing_path(thing_id: str, tail: str) -> str:
    return "/api/v1/things/" + quote(thing_id, safe="") + "/" + tail


def _checked(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 400:
        raise problem_from(response)
    return response


def _json(response: httpx.Response) -> Any:
    return _checked(response).json()


def _nothing(response: httpx.Response) -> None:
    _checked(response)


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


def _encode(document: Any) -> bytes:
    return msgspec.json.encode(document)


def _json_body(document: Any) -> dict[str, Any]:
    return {"headers": {"Content-Type": "application/json"}, "content": _encode(document)}


# -- Thing Descriptions (WoT Discovery /things)


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
    body = _encode(_with_ttl(document, ttl))
    thing_id = document.get("id")
    if isinstance(thing_id, str) and thing_id:
        headers = {"Content-Type": TD_JSON, **({"If-None-Match": "*"} if create_only else {})}
        return Call("PUT", thing_path(thing_id), _write_result(thing_id), headers=headers, content=body)
    return Call("POST", "/things", _write_result(None), headers={"Content-Type": TD_JSON}, content=body)


def register_batch(documents: Sequence[Mapping[str, Any]], *, ttl: float | None = None) -> Call[BatchResult]:
    """Create or replace up to 1,000 descriptions (each with its id) in one request and one transaction; each item
    of the result says how it went."""
    body = [_with_ttl(document, ttl) for document in documents]
    return Call("POST", "/api/v1/things/batch", _decoded(BatchResult), **_json_body(body))


def replace(document: Mapping[str, Any], *, ttl: float | None = None, if_match: str | None = None) -> Call[WriteResult]:
    """Replace the description with the document's id; ``if_match``: only if its ETag is still this one."""
    thing_id = document.get("id")
    if not isinstance(thing_id, str) or not thing_id:
        raise ValueError("replace needs a description with an id")
    headers = {"Content-Type": TD_JSON, **_if_match(if_match)}
    return Call(
        "PUT", thing_path(thing_id), _write_result(thing_id), headers=headers, content=_encode(_with_ttl(document, ttl))
    )


def patch(thing_id: str, merge_patch: Mapping[str, Any], *, if_match: str | None = None) -> Call[WriteResult]:
    """Change a description with a JSON merge patch (RFC 7396)."""
    headers = {"Content-Type": MERGE_PATCH_JSON, **_if_match(if_match)}
    return Call("PATCH", thing_path(thing_id), _write_result(thing_id), headers=headers, content=_encode(merge_patch))


def delete(thing_id: str, *, if_match: str | None = None) -> Call[None]:
    return Call("DELETE", thing_path(thing_id), _nothing, headers=_if_match(if_match))


def get(thing_id: str) -> Call[dict[str, Any]]:
    """The enriched description."""
    return Call("GET", thing_path(thing_id), _json)


def list_things(*, offset: int | None = None, limit: int | None = None) -> Call[list[dict[str, Any]]]:
    """One page of descriptions in code-point order of id (all of them without ``limit``); see ``iter_things``."""
    return Call("GET", "/things", _json, params=_given(offset=offset, limit=limit))


def _thing_page(response: httpx.Response) -> Page[dict[str, Any]]:
    """The descriptions, and the page the ``Link: rel="next"`` header names."""
    documents: list[dict[str, Any]] = _json(response)
    following = response.links.get("next", {}).get("url")
    return Page(documents, None if following is None else Call("GET", following, _thing_page))


def iter_things(*, page_size: int = 100) -> Call[Page[dict[str, Any]]]:
    """Every description, fetched ``page_size`` at a time (following the listing's ``Link: rel="next"``)."""
    return Call("GET", "/things", _thing_page, params={"limit": page_size})


def renew_lease(thing_id: str) -> Call[Lease]:
    """Keep a registration with a ttl alive: expires = now + its ttl."""
    return Call("POST", api_thing_path(thing_id, "lease"), _decoded(Lease), repeatable=True)


# -- discovery (/api/v1)


def search(
    *,
    kind: Kind | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    capability_version: str | None = None,
    type_: str | None = None,
    q: str | None = None,
    sort: SearchSort | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    facets: bool = False,
    vendor_match: VendorMatch | None = None,
    convention: Convention | None = None,
) -> Call[SearchResult]:
    """One page of matches; pass ``next_cursor`` as ``cursor`` for the next (or use ``iter_search``). ``type_`` is
    an @type; ``capability_version`` a range; ``vendor_match``: words (default), exact or fuzzy."""
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


def find(
    need: str,
    *,
    kind: Kind | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    version: str | None = None,
    limit: int = 10,
) -> Call[Findings]:
    """Agents and tools for a need in plain words, best first: each hit with its score, match quality (strong or
    weak, where the directory grades hits) and the capabilities that matched. ``version`` is a range the
    ``capability``'s version must satisfy (npm ``^1.2`` or Maven ``[1.0,2.0)``), so it needs ``capability``."""
    if not need.strip():
        raise ValueError("find needs a need: what you are looking for, in words")
    if version is not None and capability is None:
        raise ValueError("version needs capability (the capability whose version is constrained)")
    params = _given(q=need, kind=kind, vendor=vendor, capability=capability, capability_version=version, limit=limit)
    return Call("GET", "/api/v1/search", _decoded(Findings), params=params)


def iter_search(
    *,
    kind: Kind | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    capability_version: str | None = None,
    type_: str | None = None,
    q: str | None = None,
    sort: SearchSort | None = None,
    page_size: int | None = None,
    cursor: str | None = None,
    vendor_match: VendorMatch | None = None,
    convention: Convention | None = None,
) -> Call[Page[SearchItem]]:
    """Every match, page after page (``page_size`` at a time) by the search's keyset cursor; ``cursor`` starts
    after a page already read."""
    first = search(
        kind=kind,
        vendor=vendor,
        capability=capability,
        capability_version=capability_version,
        type_=type_,
        q=q,
        sort=sort,
        limit=page_size,
        cursor=cursor,
        vendor_match=vendor_match,
        convention=convention,
    )
    return _search_pages(first)


def _search_pages(call: Call[SearchResult]) -> Call[Page[SearchItem]]:
    def parse(response: httpx.Response) -> Page[SearchItem]:
        result = call.parse(response)
        if result.next_cursor is None:
            return Page(result.items, None)
        following = dataclasses.replace(call, params={**(call.params or {}), "cursor": result.next_cursor})
        return Page(result.items, _search_pages(following))

    return call.reading(parse)


def facets(
    *,
    kind: Kind | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    capability_version: str | None = None,
    type_: str | None = None,
    q: str | None = None,
    convention: Convention | None = None,
    vendor_match: VendorMatch | None = None,
) -> Call[Facets]:
    """Counts of the matches by kind, vendor, capability and convention (the same filters as ``search``)."""
    params = _given(
        kind=kind,
        vendor=vendor,
        vendor_match=vendor_match,
        capability=capability,
        capability_version=capability_version,
        type=type_,
        q=q,
        convention=convention,
    )
    return Call("GET", "/api/v1/facets", _decoded(Facets), params=params)


def summary(thing_id: str) -> Call[ThingSummary]:
    """What a description offers: kind, vendor, version, capabilities and lint warnings."""
    return Call("GET", api_thing_path(thing_id, "summary"), _decoded(ThingSummary))


def versions(thing_id: str, *, satisfies: str | None = None) -> Call[VersionList]:
    """Kept versions, newest first; with ``satisfies`` (a range) only those in it."""
    return Call("GET", api_thing_path(thing_id, "versions"), _decoded(VersionList), params=_given(satisfies=satisfies))


def iter_versions(thing_id: str, *, satisfies: str | None = None) -> Call[Page[VersionInfo]]:
    """Kept versions one by one, newest first (the directory answers them in one page)."""
    listing = versions(thing_id, satisfies=satisfies)

    def parse(response: httpx.Response) -> Page[VersionInfo]:
        return Page(listing.parse(response).items, None)

    return listing.reading(parse)


def version(thing_id: str, version: str) -> Call[VersionDetail]:
    """One kept version: its document and its compatibility with the version before."""
    path = api_thing_path(thing_id, "versions/" + quote(version, safe=""))
    return Call("GET", path, _decoded(VersionDetail))


def recent_changes(*, limit: int = 50) -> Call[RecentChanges]:
    """The latest entries of the change log, newest first (``seq`` is the event id ``watch`` resumes after)."""
    return Call("GET", "/api/v1/changes", _decoded(RecentChanges), params={"limit": limit})


def _newest_event_id(response: httpx.Response) -> int:
    items = _decoded(RecentChanges)(response).items
    return items[0].seq if items else 0


# -- queries (/search)

SPARQL_RESULTS_JSON = "application/sparql-results+json"


def _sparql_call(query: str, accept: str, parse: Callable[[httpx.Response], T], post: bool) -> Call[T]:
    """SPARQL 1.1 protocol: the query in the URL (GET), or as the body (POST, for long queries)."""
    if post:
        headers = {"Accept": accept, "Content-Type": "application/sparql-query"}
        return Call("POST", "/search/sparql", parse, headers=headers, content=query.encode(), repeatable=True)
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


def sparql_graph(query: str, *, media_type: GraphMediaType = "text/turtle", post: bool = False) -> Call[str]:
    """A CONSTRUCT or DESCRIBE query; the graph serialised as ``media_type``."""

    def parse(response: httpx.Response) -> str:
        return _checked(response).text

    return _sparql_call(query, media_type, parse, post)


def jsonpath(query: str) -> Call[list[Any]]:
    """An RFC 9535 query over the array of all descriptions; the matches, as a list."""
    return Call("GET", "/search/jsonpath", _decoded(list[Any]), params={"query": query})


# -- resolution and compatibility


def resolve(requirements: Sequence[Requirement | str | Mapping[str, Any]]) -> Call[ResolveResult]:
    """Requirements as ``Requirement``, a capability name or id (any version, highest), or a mapping sent as is."""
    body = [Requirement(item) if isinstance(item, str) else item for item in requirements]
    return Call(
        "POST", "/api/v1/resolve", _decoded(ResolveResult), repeatable=True, **_json_body({"requirements": body})
    )


def _compatibility(body: Mapping[str, Any]) -> Call[CompatibilityResult]:
    return Call("POST", "/api/v1/compatibility", _decoded(CompatibilityResult), repeatable=True, **_json_body(body))


def compatibility(thing_id: str, from_version: str, to_version: str) -> Call[CompatibilityResult]:
    """Compare two kept versions of a description."""
    return _compatibility({"id": thing_id, "from": from_version, "to": to_version})


def compare(old: Mapping[str, Any], new: Mapping[str, Any]) -> Call[CompatibilityResult]:
    """Compare two descriptions that need not be registered."""
    return _compatibility({"old": old, "new": new})


# -- other formats: LLM tools and A2A Agent Cards


def import_tool(
    definition: Any,
    tool_format: ToolFormat,
    *,
    thing_id: str | None = None,
    vendor: str | None = None,
    version: str | None = None,
    href: str | None = None,
) -> Call[ImportedTool]:
    """Store an LLM tool definition as an lmos:Tool (without ``thing_id`` re-importing replaces it)."""
    params = _given(format=tool_format, id=thing_id, vendor=vendor, version=version, href=href)
    return Call("POST", "/api/v1/tools/import", _decoded(ImportedTool), params=params, **_json_body(definition))


def import_card(card: Any, *, thing_id: str | None = None) -> Call[ImportedAgent]:
    """Store an A2A Agent Card as an lmos:Agent (without ``thing_id`` re-importing the card replaces it)."""
    params = _given(format="a2a", id=thing_id)
    return Call("POST", "/api/v1/agents/import", _decoded(ImportedAgent), params=params, **_json_body(card))


#: One tool definition, or a list of them.
Exported = dict[str, Any] | list[dict[str, Any]]


def export(thing_id: str, tool_format: ExportFormat) -> Call[Exported]:
    """A tool as one definition (a dict); an agent, or a tool with several functions, as a list of them; an agent
    as its A2A Agent Card with ``a2a``."""

    def parse(response: httpx.Response) -> Exported:
        exported: Exported = msgspec.json.decode(_checked(response).content, type=Exported)
        return exported

    return Call("GET", api_thing_path(thing_id, "export"), parse, params={"format": tool_format})


# -- change events (/events, Server-Sent Events)


def events_request(
    event_type: EventType | None,
    *,
    diff: bool,
    filters: Mapping[str, str | None],
    last_event_id: int | str | None,
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
    """An SSE message as an Event; None for messages that are not change events. The id is the change's
    sequence, alone or followed by the stream's position (``seq/high/pending``)."""
    if kind not in EVENT_TYPES or not event_id:
        return None
    seq = int(event_id.partition("/")[0])
    return Event(type=kind, seq=seq, data=msgspec.json.decode(data) if data else {}, id=event_id)


#: Response header of an event stream: where it starts, as an event id.
STREAM_POSITION = "registry-stream-position"
#: Sequences of delivered events a subscription remembers, so that none is delivered twice.
_REMEMBERED = 10_000


def covered_by(event_id: int | str, seq: int) -> bool:
    """Whether a stream resumed after ``event_id`` has had change ``seq``: it is at or below the id's position and
    not in its pending ranges (``seq/high/first-last,…``). False for an id this SDK cannot read."""
    first, _, position = str(event_id).strip().partition("/")
    high_text, _, pending = position.partition("/")
    try:
        high = int(high_text or first)
        spans = [part.partition("-") for part in pending.split(",") if part]
        return seq <= high and not any(int(low) <= seq <= int(up or low) for low, _, up in spans)
    except ValueError:
        return False


class Subscription:
    """An event subscription, and where a reconnection resumes: after the last event delivered (its id names the
    stream's position, changes committed late included), or (none yet) after the newest change when the
    subscription began, so a broken stream loses nothing. A change committed late comes after changes of higher
    sequence; no change is delivered twice."""

    def __init__(
        self,
        event_type: EventType | None,
        *,
        diff: bool,
        filters: Mapping[str, str | None],
        last_event_id: int | str | None,
        reconnect: bool,
        retry_delay: float,
    ) -> None:
        events_request(event_type, diff=diff, filters=filters, last_event_id=None)  # refuses an unknown type now
        self.event_type = event_type
        self.diff = diff
        self.filters = filters
        #: Id of the last event delivered (the one given, at first): a reconnection resumes after it.
        self.last_event_id: int | str | None = last_event_id
        #: Sequences of the latest events delivered, oldest first.
        self._delivered: collections.OrderedDict[int, None] = collections.OrderedDict()
        self.reconnect = reconnect
        self.retry_delay = retry_delay
        #: Where the subscription began (the stream's start position the directory named, else the newest change
        #: before it), for a reconnection before any event arrived.
        self.began_after: int | str | None = None
        self._connected = False
        self._resuming = False

    def start(self) -> Call[int] | None:
        """What to ask before the first connection: the newest event id, unless the subscription resumes."""
        if self.last_event_id is not None:
            return None
        return Call("GET", "/api/v1/changes", _newest_event_id, params={"limit": 1})

    def began(self, newest_event_id: int) -> None:
        if self.began_after is None:
            self.began_after = newest_event_id

    def request(self) -> tuple[str, dict[str, str], dict[str, str]]:
        # The first connection of a new subscription sends no Last-Event-ID: once the directory has answered with
        # its headers it sends every change committed after it subscribed, in order.
        resume_after = self.last_event_id
        if resume_after is None and self._connected:
            resume_after = self.began_after
        self._connected = True
        self._resuming = resume_after is not None
        return events_request(self.event_type, diff=self.diff, filters=self.filters, last_event_id=resume_after)

    def subscribed(self, stream_position: str | None) -> None:
        """The directory answered the request last made; ``stream_position`` is where a stream without
        ``Last-Event-ID`` starts (``Registry-Stream-Position``): exact, pending sequences included."""
        if not self._resuming and stream_position:
            self.began_after = stream_position

    def receive(self, message: httpx_sse.ServerSentEvent) -> Event | None:
        event = event_from(message.event, message.id, message.data)
        if event is None or event.seq in self._delivered:
            return None
        if self.last_event_id is not None and covered_by(self.last_event_id, event.seq):
            return None
        self.last_event_id = event.id
        self._delivered[event.seq] = None
        if len(self._delivered) > _REMEMBERED:
            self._delivered.popitem(last=False)
        return event

    def may_retry(self, error: Exception) -> bool:
        """Whether a reconnection goes on after ``error``: transport failures and answers worth retrying (429,
        5xx, e.g. a replica restarting behind a proxy) with ``reconnect``; a refusal never."""
        if not self.reconnect:
            return False
        return not isinstance(error, ProblemError) or error.status == 429 or error.status >= 500


def subscribe(
    event_type: EventType | None = None,
    *,
    diff: bool = False,
    kind: Kind | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    q: str | None = None,
    last_event_id: int | str | None = None,
    reconnect: bool = True,
    retry_delay: float = 1.0,
) -> Subscription:
    """Change events as they happen, of one ``event_type`` or all, of the descriptions that match ``kind``,
    ``vendor``, ``capability`` and ``q`` before or after the change; with ``diff`` the created TD or the merge
    patch as data. ``last_event_id`` replays the events after it first. A broken stream is reconnected (after
    ``retry_delay`` s) and resumed with Last-Event-ID: no event lost, none twice."""
    filters = {"kind": kind, "vendor": vendor, "capability": capability, "q": q}
    return Subscription(
        event_type,
        diff=diff,
        filters=filters,
        last_event_id=last_event_id,
        reconnect=reconnect,
        retry_delay=retry_delay,
    )


__all__ = [
    "EVENT_TYPES",
    "SEARCH_SORTS",
    "TOOL_FORMATS",
    "Call",
    "Exported",
    "Page",
    "Subscription",
    "api_thing_path",
    "compare",
    "compatibility",
    "delete",
    "event_from",
    "events_request",
    "export",
    "facets",
    "find",
    "get",
    "import_card",
    "import_tool",
    "iter_search",
    "iter_things",
    "iter_versions",
    "jsonpath",
    "list_things",
    "patch",
    "recent_changes",
    "register",
    "register_batch",
    "renew_lease",
    "replace",
    "resolve",
    "search",
    "sparql",
    "sparql_graph",
    "subscribe",
    "summary",
    "thing_path",
    "version",
    "versions",
]
