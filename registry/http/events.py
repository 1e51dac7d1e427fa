"""WoT Discovery notifications (§7.3.2.4): ``/events`` and ``/events/{type}`` as Server-Sent Events.

Beyond the spec, ``kind``, ``vendor``, ``capability`` and ``q`` narrow a subscription to the descriptions that
match before or after the change (e.g. "providers of capability X"), and ``thing_transferred`` events tell of
ownership transfers. With tenants, a subscriber only gets the changes of descriptions it may read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from litestar import Request, get
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Stream

from registry.errors import BadRequest, NotFound
from registry.events.filters import FILTER_PARAMETERS, DescriptionFilter
from registry.events.hub import EVENT_TYPES, EventHub, Subscriber
from registry.events.positions import Position, parse_event_id
from registry.http.access import QUERY_TOKEN, requester, tenant_scope_of
from registry.http.bodies import reject_unknown_parameters
from registry.http.contract import Answer, Param, documented
from registry.http.dependencies import Access

EVENT_STREAM = "text/event-stream"
#: Response header: the position the stream starts at, as an event id (resuming with it loses nothing, repeats
#: nothing, even when the stream breaks before its first event).
STREAM_POSITION = "Registry-Stream-Position"
#: Names of the Directory Thing Model's event affordances this module implements.
EVENT_AFFORDANCES = frozenset({"thingCreated", "thingUpdated", "thingDeleted"})
EVENT_PARAMETERS = frozenset({"diff", "lastEventId", "access_token", *FILTER_PARAMETERS})

_SUBSCRIPTION = documented(
    parameters=[
        Param("diff", "Send the enriched TD (created) or the merge patch (updated) as data", {"type": "boolean"}),
        Param("kind", "Only changes of agents or tools", {"enum": ["agent", "tool"]}),
        Param("vendor", "Only changes of this vendor's descriptions (any case)"),
        Param("capability", "Only changes of descriptions offering this capability (id or name)"),
        Param("q", "Only changes of descriptions whose text matches"),
        Param("Last-Event-ID", "Resume after this event id (replays what was missed)", location="header"),
    ],
    answers={
        200: Answer(
            "Server-Sent Events, sent as they happen: event thing_created, thing_updated, thing_deleted or "
            "thing_transferred, id the change's sequence number (with the stream's position, seq/high/pending, "
            "when earlier changes were still pending: docs/live-directory.md), data JSON ({id, actor}, or with diff "
            "the enriched TD / the merge patch; {id, from, to, actor} for a transfer of ownership). Only changes of "
            "descriptions the caller may read. Nothing precedes the first event; comments keep an idle stream open",
            {EVENT_STREAM: {"type": "string"}},
            headers={
                "Cache-Control": "no-cache",
                STREAM_POSITION: "Where the stream starts: an event id to resume with (Last-Event-ID) should the "
                "stream break before its first event",
            },
        )
    },
)


def _diff_flag(raw: str | None) -> bool:
    if raw is None or raw.lower() == "false":
        return False
    if raw.lower() == "true":
        return True
    raise BadRequest(
        f"Query parameter diff must be true or false, got {raw!r}",
        invalidParams=[{"name": "diff", "reason": "must be true or false"}],
    )


def _last_event_id(request: Request[Any, Any, Any]) -> Position | None:
    # The header (what EventSource sends when it reconnects) wins; the query parameter lets a page start a stream
    # after the changes it has just read (GET /api/v1/changes), which EventSource cannot say with a header.
    raw = request.headers.get("last-event-id") or request.query_params.get("lastEventId")
    if raw is None or not raw.strip():
        return None
    try:
        _, position = parse_event_id(raw)
    except ValueError:
        raise BadRequest(
            f"Last-Event-ID must be an event id sent by this directory (a sequence number, or "
            f"sequence/high/pending ranges), got {raw[:200]!r}"
        ) from None
    return position


async def _stream(
    hub: EventHub, subscriber: Subscriber, last_event_id: Position | None, release: Callable[[], None]
) -> AsyncIterator[bytes]:
    # Nothing before the first event: the headers go out at once (the server sends them before the body), and
    # stock clients such as r3labs/sse v2.3.3 (the W3C WoT Discovery test suite's) hand any first block, even a
    # comment, to the application as an event.
    try:
        if last_event_id is not None:
            async for _, frame in hub.replay(subscriber, last_event_id):
                yield frame
        while (chunk := await subscriber.next_chunk(last_event_id)) is not None:
            if chunk:
                yield chunk
        yield subscriber.farewell
    finally:
        hub.unsubscribe(subscriber)
        release()


async def _subscribe(request: Request[Any, Any, Any], hub: EventHub, access: Access, types: tuple[str, ...]) -> Stream:
    reject_unknown_parameters(request, EVENT_PARAMETERS)
    params = request.query_params
    diff = _diff_flag(params.get("diff"))
    query = DescriptionFilter.from_query(params)
    last_event_id = _last_event_id(request)
    who = requester(request)
    # A subscriber sees every change committed after it subscribed, and none before: the feed first delivers
    # what is already committed (an acknowledged write whose notification has not arrived yet would otherwise
    # reach this new subscriber as if it happened later).
    await hub.feed.sync()
    access.limits.open_stream(who)
    subscriber = hub.subscribe(frozenset(types), diff, query, tenant_scope_of(request))
    return Stream(
        _stream(hub, subscriber, last_event_id, lambda: access.limits.close_stream(who)),
        media_type=EVENT_STREAM,
        headers={
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",
            STREAM_POSITION: subscriber.start.event_id(subscriber.start.high),
        },
    )


@get(
    "/events",
    operation_id="subscribeEvents",
    summary="All change events (SSE)",
    tags=["Events (WoT Discovery)"],
    opt={QUERY_TOKEN: True, **_SUBSCRIPTION},
)
async def all_events(
    request: Request[Any, Any, Any], events: NamedDependency[EventHub], access: NamedDependency[Access]
) -> Stream:
    return await _subscribe(request, events, access, EVENT_TYPES)


@get(
    "/events/{event_type:str}",
    operation_id="subscribeEventsOfType",
    summary="Change events of one type: thing_created, thing_updated, thing_deleted or thing_transferred (SSE)",
    tags=["Events (WoT Discovery)"],
    opt={QUERY_TOKEN: True, **_SUBSCRIPTION},
)
async def events_of_type(
    event_type: FromPath[str],
    request: Request[Any, Any, Any],
    events: NamedDependency[EventHub],
    access: NamedDependency[Access],
) -> Stream:
    if event_type not in EVENT_TYPES:
        raise NotFound(f"No event type {event_type!r}; the types are {', '.join(EVENT_TYPES)}")
    return await _subscribe(request, events, access, (event_type,))


__all__ = ["EVENT_AFFORDANCES", "all_events", "events_of_type"]
