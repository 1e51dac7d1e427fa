"""WoT Discovery notifications (§7.3.2.4): ``/events`` and ``/events/{type}`` as Server-Sent Events.

Beyond the spec, ``kind``, ``vendor``, ``capability`` and ``q`` narrow a subscription to the descriptions that
match before or after the change (e.g. "providers of capability X").
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from litestar import Request, get
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar.response import Stream

from registry.errors import BadRequest, NotFound
from registry.events.filters import FILTER_PARAMETERS, DescriptionFilter
from registry.events.hub import DROPPED, EVENT_TYPES, EventHub, Subscriber
from registry.http.bodies import reject_unknown_parameters

EVENT_STREAM = "text/event-stream"
#: Names of the Directory Thing Model's event affordances this module implements.
EVENT_AFFORDANCES = frozenset({"thingCreated", "thingUpdated", "thingDeleted"})
EVENT_PARAMETERS = frozenset({"diff", *FILTER_PARAMETERS})


def _diff_flag(raw: str | None) -> bool:
    if raw is None or raw.lower() == "false":
        return False
    if raw.lower() == "true":
        return True
    raise BadRequest(
        f"Query parameter diff must be true or false, got {raw!r}",
        invalidParams=[{"name": "diff", "reason": "must be true or false"}],
    )


def _last_event_id(request: Request[Any, Any, Any]) -> int | None:
    raw = request.headers.get("last-event-id")
    if raw is None or not raw.strip():
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise BadRequest(f"Last-Event-ID must be an event id sent by this directory (an integer), got {raw!r}")
    return value


async def _stream(hub: EventHub, subscriber: Subscriber, last_event_id: int | None) -> AsyncIterator[bytes]:
    try:
        # A first chunk, so the response (and its headers) reach the client at once.
        yield b": subscribed\n\n"
        if last_event_id is not None:
            async for _, frame in hub.replay(subscriber, last_event_id):
                yield frame
        after = last_event_id or 0
        while (chunk := await subscriber.next_chunk(after)) is not None:
            if chunk:
                yield chunk
        yield DROPPED
    finally:
        hub.unsubscribe(subscriber)


def _subscribe(request: Request[Any, Any, Any], hub: EventHub, types: tuple[str, ...]) -> Stream:
    reject_unknown_parameters(request, EVENT_PARAMETERS)
    params = request.query_params
    diff = _diff_flag(params.get("diff"))
    query = DescriptionFilter.from_query(params)
    last_event_id = _last_event_id(request)
    subscriber = hub.subscribe(frozenset(types), diff, query)
    return Stream(
        _stream(hub, subscriber, last_event_id),
        media_type=EVENT_STREAM,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@get("/events", operation_id="subscribeEvents", summary="All change events (SSE)", tags=["Events (WoT Discovery)"])
async def all_events(request: Request[Any, Any, Any], events: NamedDependency[EventHub]) -> Stream:
    return _subscribe(request, events, EVENT_TYPES)


@get(
    "/events/{event_type:str}",
    operation_id="subscribeEventsOfType",
    summary="Change events of one type: thing_created, thing_updated or thing_deleted (SSE)",
    tags=["Events (WoT Discovery)"],
)
async def events_of_type(
    event_type: FromPath[str], request: Request[Any, Any, Any], events: NamedDependency[EventHub]
) -> Stream:
    if event_type not in EVENT_TYPES:
        raise NotFound(f"No event type {event_type!r}; the types are {', '.join(EVENT_TYPES)}")
    return _subscribe(request, events, (event_type,))


__all__ = ["EVENT_AFFORDANCES", "all_events", "events_of_type"]
