"""Settings of the group "Events": the change feed and its SSE streams."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from registry.config.fields import EVENTS, setting
from registry.config.parsers import non_negative


@dataclasses.dataclass(frozen=True)
class EventSettings:
    """The fields of :class:`registry.config.Settings` in the group ``EVENTS``; never made on its own."""

    # No slots of its own: Settings, which gathers the groups, has a slot per field (and no __dict__).
    __slots__ = ()

    sse_keepalive: float = setting(EVENTS, 15.0, "Seconds between SSE keep-alive comments.")
    sse_queue_size: int = setting(EVENTS, 1000, "Events buffered per SSE subscriber before it is told to reconnect.")
    sse_queue_bytes: int = setting(
        EVENTS,
        8 * 1024 * 1024,
        "Bytes of events buffered per SSE subscriber before it is told to reconnect (with `diff=true` an event holds "
        "a whole description).",
    )
    feed_poll_interval: float = setting(
        EVENTS,
        5.0,
        "Seconds between fallback polls of the change log (LISTEN/NOTIFY is the fast path).",
    )


#: How each field's ``REGISTRY_*`` variable is read.
PARSERS: dict[str, Callable[[str], Any]] = {
    "sse_keepalive": non_negative(float),
    "sse_queue_size": non_negative(int),
    "sse_queue_bytes": non_negative(int),
    "feed_poll_interval": non_negative(float),
}
