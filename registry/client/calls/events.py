"""Change events (``/events``, Server-Sent Events): the subscription, where it resumes, what it delivers."""

from __future__ import annotations

import collections
from collections.abc import Mapping

import httpx
import httpx_sse
import msgspec

from registry.client.calls.call import Call, decoded
from registry.client.errors import ProblemError
from registry.client.models import Event, RecentChanges
from registry.client.vocabulary import EVENT_TYPES, EventType, Kind


def _newest_event_id(response: httpx.Response) -> int:
    items = decoded(RecentChanges)(response).items
    return items[0].seq if items else 0


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
