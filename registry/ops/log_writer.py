"""Access lines written off the request path: the request queues its fields, a thread encodes and writes them.

A request hands :meth:`AccessLines.put` a tuple of what its line says, which costs a deque append; it never
waits for the log stream, formats nothing and runs no structlog processor. A daemon thread wakes every
``interval`` seconds, encodes the queued entries with msgspec into JSON lines (the fields and format of every
other JSON log line of the process) and writes them in writes of at most ``PIPE_BUF`` bytes that end at line
ends, so that lines of several server processes sharing one pipe never interleave mid-line. The queue is bounded:
a request whose line finds it full drops the line and counts it (``registry_access_log_dropped_total``) rather
than waiting for a slow log collector. :meth:`AccessLines.close` (at exit) writes what is queued, so a process
that stops cleanly loses no line.
"""

from __future__ import annotations

import collections
import os
import re
import select
import threading
import time
from collections.abc import Callable

import msgspec

#: What a request queues: when it was answered (Unix seconds), request id, method, path, route template, status
#: (0 when no answer started), seconds it took, client address.
Entry = tuple[float, str, str, str, str | None, int, float, str]

#: C0 and C1 controls, DEL, and the Unicode line separators and bidi overrides that can disguise a log line.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: Bytes one write may carry for the kernel to keep it whole among other processes' writes to the same pipe.
CHUNK = select.PIPE_BUF
#: Entries encoded in one go.
BATCH = 512


def _escaped_character(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code > 0xFF else f"\\x{code:02x}"


def escape(text: str) -> str:
    """``text`` with control characters written out as ``\\xNN`` or ``\\uNNNN`` (none of them is printable, so a
    printable text, the common case, is returned as it is without a regular expression's pass)."""
    return text if text.isprintable() else UNSAFE.sub(_escaped_character, text)


class AccessLine(msgspec.Struct, omit_defaults=True):
    """One access line as JSON: the fields structlog's JSON lines have (event, level, logger, timestamp, the
    request id bound for the request), then the request's."""

    event: str
    request_id: str
    level: str
    logger: str
    timestamp: str
    method: str
    path: str
    route: str | None
    status: int | None
    duration_ms: float
    client: str
    process: str | None = None


class AccessLines:
    """A bounded queue of access entries and the thread that writes them as JSON lines through ``write``."""

    def __init__(
        self,
        write: Callable[[bytes], None],
        *,
        logger: str = "registry.access",
        process: str | None = None,
        capacity: int = 65_536,
        interval: float = 0.1,
    ) -> None:
        self.capacity = capacity
        self.interval = interval
        #: Lines not queued (the queue was full: counted by the requests) and not written (the stream refused
        #: them: counted by the thread), apart so that neither count is a read-modify-write of the other thread's.
        self._refused = 0
        self._lost = 0
        self._write = write
        self._logger = logger
        self._process = process
        self._queue: collections.deque[Entry] = collections.deque()
        #: The second the last line was in, and its date and time of day formatted (once a second).
        self._second = -1
        self._prefix = ""
        self._encoder = msgspec.json.Encoder()
        self._writing = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def dropped(self) -> int:
        """Lines not written: the queue was full, or the stream refused them."""
        return self._refused + self._lost

    def put(self, entry: Entry) -> None:
        """Queue one request's line, or count it dropped when the queue is full."""
        if len(self._queue) >= self.capacity:
            self._refused += 1
        else:
            self._queue.append(entry)

    def start(self) -> AccessLines:
        self._thread = threading.Thread(target=self._run, name="registry-access-log", daemon=True)
        self._thread.start()
        return self

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread and write every queued line."""
        self._stopped.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self.flush()

    def flush(self) -> None:
        """Write every line queued so far."""
        with self._writing:
            while batch := self._take():
                data = self._encoder.encode_lines(self._lines(batch))
                try:
                    for chunk in chunks(data):
                        self._write(chunk)
                except (OSError, ValueError):  # a closed or broken stream: the lines are lost, and counted
                    self._lost += len(batch)

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            self.flush()

    def _take(self) -> list[Entry]:
        queue, batch = self._queue, []
        for _ in range(min(len(queue), BATCH)):
            batch.append(queue.popleft())
        return batch

    def _lines(self, batch: list[Entry]) -> list[AccessLine]:
        """The lines of ``batch``: one loop with everything it reads in local names, as it runs for every request
        (in the server process, under its GIL)."""
        lines: list[AccessLine] = []
        append, line, logger, process = lines.append, AccessLine, self._logger, self._process
        current, prefix = self._second, self._prefix
        for moment, request_id, method, path, route, status, seconds, client in batch:
            second = int(moment)
            if second != current:  # the date and time of day change once a second
                current, prefix = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            if not path.isprintable():
                path = escape(path)
            if not client.isprintable():
                client = escape(client)
            append(
                line(
                    f"{method} {path} {status}",
                    request_id,
                    "info",
                    logger,
                    # structlog's ISO format, in UTC; a percent format costs less than an f-string with a format spec
                    "%s.%06dZ" % (prefix, (moment - second) * 1_000_000),  # noqa: UP031
                    method,
                    path,
                    route,
                    status or None,
                    int(seconds * 1_000_000) / 1000,  # milliseconds to the microsecond, as round(…, 3) but cheaper
                    client,
                    process,
                )
            )
        self._second, self._prefix = current, prefix
        return lines


def chunks(data: bytes, size: int = CHUNK) -> list[bytes]:
    """``data`` (lines) cut after line ends into pieces of at most ``size`` bytes (a longer line is one piece)."""
    pieces = []
    start = 0
    while len(data) - start > size:
        end = data.rfind(b"\n", start, start + size) + 1
        if end <= start:  # one line longer than size: it goes whole
            end = data.index(b"\n", start + size) + 1
        pieces.append(data[start:end])
        start = end
    if start < len(data):
        pieces.append(data[start:])
    return pieces


def fd_writer(descriptor: int) -> Callable[[bytes], None]:
    """Write all of each piece to ``descriptor`` (a pipe may take part of a write)."""

    def write(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]

    return write


__all__ = ["AccessLine", "AccessLines", "Entry", "chunks", "escape", "fd_writer"]
