"""Access lines written off the request path and out of the server process: the request queues its fields, a
thread hands them in batches to a log process that encodes and writes them.

A request hands :meth:`AccessLines.put` a tuple of what its line says, which costs a deque append; it never
waits for the log stream, formats nothing, reads no wall clock and runs no structlog processor. A daemon thread
wakes every ``interval`` seconds and hands the queued entries to a :class:`LogProcess` (started with the first
batch), which encodes them into JSON lines (the fields and format of every other JSON log line of the process) and
writes them in writes of at most ``PIPE_BUF`` bytes that end at line ends, so that lines of several server
processes sharing one pipe never interleave mid-line. Without a log process (none could be started, or the stream
has no descriptor) the thread encodes and writes them itself. The queue is bounded: a request whose line finds it
full drops the line and counts it (``registry_access_log_dropped_total``) rather than waiting for a slow log
collector. :meth:`AccessLines.close` (at exit) writes what is queued, so a process that stops cleanly loses no
line.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import fcntl
import itertools
import marshal
import operator
import os
import re
import select
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from itertools import repeat
from pathlib import Path
from typing import Any

import msgspec

#: What a request queues: when it was answered (``time.perf_counter()``), request id, method, path, route template,
#: status (0 when no answer started), seconds it took, client (the ASGI scope's: address and port, or None).
Entry = tuple[float, str, str, str, str | None, int, float, Sequence[Any] | None]

#: C0 and C1 controls, DEL, and the Unicode line separators and bidi overrides that can disguise a log line.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: Bytes one write may carry for the kernel to keep it whole among other processes' writes to the same pipe.
CHUNK = select.PIPE_BUF
#: Entries encoded in one go.
BATCH = 4096
#: The pipe to the log process holds a busy server's batch (about 170 bytes an entry), up to Linux's limit for
#: unprivileged processes.
PIPE_BYTES = 1 << 20


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
    timestamp: dt.datetime  # UTC: encoded as structlog's ISO format, ``2026-01-02T03:04:05.678901Z``
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
        log_process: LogProcess | Callable[[], LogProcess | None] | None = None,
        chunk: int | None = CHUNK,
    ) -> None:
        self.capacity = capacity
        #: Bytes a write carries at most (cut at line ends), or None for one write a batch (a regular file).
        self._chunk = chunk
        self.interval = interval
        #: Lines not queued (the queue was full: counted by the requests) and not written (the stream refused
        #: them: counted by the thread), apart so that neither count is a read-modify-write of the other thread's.
        self._refused = 0
        self._lost = 0
        self._write = write
        self._logger = logger
        self._process = process
        #: Appended to by requests (the access log middleware checks ``capacity`` first), taken by the thread.
        self.queue: collections.deque[Entry] = collections.deque()
        self._encoder = msgspec.json.Encoder()
        #: A plain line's constant pieces, between its variable fields (texts that are JSON as they are).
        process_field = "" if process is None else ',"process":' + self._encoder.encode(process).decode()
        self._pieces = tuple(
            map(
                repeat,
                (
                    '{"event":"',
                    " ",
                    " ",
                    '","request_id":"',
                    '","level":"info","logger":' + self._encoder.encode(logger).decode() + ',"timestamp":"',
                    '","method":"',
                    '","path":"',
                    '","route":',
                    ',"status":',
                    ',"duration_ms":',
                    ',"client":"',
                    '"' + process_field + "}\n",
                ),
            )
        )
        #: The log process, or what starts it with the first batch (a process that logs no request starts none).
        self._log_process = log_process if isinstance(log_process, LogProcess) else None
        self._start_log_process = None if isinstance(log_process, LogProcess) else log_process
        #: Lines the log process could not write, as it last said.
        self._lost_there = 0
        self._writing = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def dropped(self) -> int:
        """Lines not written: the queue was full, or the stream refused them."""
        return self._refused + self._lost + self._lost_there

    def put(self, entry: Entry) -> None:
        """Queue one request's line, or count it dropped when the queue is full."""
        if len(self.queue) >= self.capacity:
            self._refused += 1
        else:
            self.queue.append(entry)

    def refuse(self) -> None:
        """Count a line dropped because the queue was full."""
        self._refused += 1

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
        if self._log_process is not None:
            self._log_process.close(timeout)

    def flush(self) -> None:
        """Write every line queued so far (handed to the log process, if any, and written by it on return)."""
        with self._writing:
            sent = False
            while batch := self._take():
                if self._send(batch):
                    sent = True
                else:  # no log process, or it could not take the batch
                    self._write_here(batch)
            if sent:
                self._sync_log_process()

    def _send(self, batch: list[Entry]) -> bool:
        """Hand ``batch`` to the log process (started with the first batch); False when there is none or it
        could not take the batch."""
        if self._start_log_process is not None:
            self._log_process, self._start_log_process = self._start_log_process(), None
        child = self._log_process
        return child is not None and child.send(batch)

    def _write_here(self, batch: list[Entry]) -> None:
        """Encode and write ``batch`` in this process, in pieces of at most ``chunk`` bytes."""
        data = self._encode(batch)
        try:
            for piece in [data] if self._chunk is None else chunks(data, self._chunk):
                self._write(piece)
        except (OSError, ValueError):  # a closed or broken stream: the lines are lost, and counted
            self._lost += len(batch)

    def _sync_log_process(self) -> None:
        """Wait until the log process has written what it was handed, and keep its count of lost lines."""
        if self._log_process is None:
            return
        lost = self._log_process.sync()
        if lost is not None:
            self._lost_there = lost

    def _run(self) -> None:
        while not self._stopped.wait(self.interval):
            self.flush()

    def _take(self) -> list[Entry]:
        """Up to ``BATCH`` of the oldest queued entries (popped in C, without a bytecode per entry: this thread
        shares the server's interpreter lock)."""
        queue = self.queue
        return list(itertools.islice(iter(queue.popleft, None), min(len(queue), BATCH)))

    def _encode(self, batch: list[Entry]) -> bytes:
        """The JSON lines of ``batch``, made column by column with C-level calls: no bytecode runs per line, as the
        lines are made in the server process, under its interpreter lock.

        Most batches are plain (their texts need no JSON escape and have no control character): their lines are
        one ``%`` format each of a template with the constant fields already in it. A batch with any other text is
        encoded field by field with msgspec, its control characters escaped first."""
        ended, request_ids, methods, paths, routes, statuses, durations, peers = zip(*batch, strict=True)
        if None in peers:  # no client address (a Unix socket): an empty one
            peers = tuple(peer or ("",) for peer in peers)
        clients: Sequence[str] = tuple(map(_ADDRESS, peers))
        # Wall-clock time of each answer: its monotonic time plus the clocks' offset, read once a batch; the
        # timestamps encoded by msgspec in one call (structlog's ISO format in UTC, ``…T03:04:05.678901Z``).
        offset = time.time() - time.perf_counter()
        moments = msgspec.convert(list(map(operator.add, ended, repeat(offset))), list[dt.datetime], strict=False)
        # milliseconds to the microsecond, as round(…, 3)
        milliseconds = map(operator.truediv, map(int, map(operator.mul, durations, repeat(1_000_000.0))), repeat(1000))
        texts = "".join(itertools.chain(request_ids, methods, paths, clients))
        if texts.isascii() and len(texts.encode().translate(None, _NOT_PLAIN)) == len(texts):
            # Numbers and timestamps as JSON by msgspec, a column in one call; the lines joined from their pieces.
            encode = self._encoder.encode
            timestamps = encode(moments).decode()[2:-2].split('","')
            durations_ms = encode(list(milliseconds)).decode()[1:-1].split(",")
            p = self._pieces
            fields = zip(
                p[0], methods, p[1], paths, p[2], map(_DIGITS.__getitem__, statuses),
                p[3], request_ids, p[4], timestamps, p[5], methods, p[6], paths,
                p[7], map(_ROUTES.__getitem__, routes), p[8], map(_STATUSES.__getitem__, statuses),
                p[9], durations_ms, p[10], clients, p[11],
                strict=False,  # the pieces repeat without end
            )  # fmt: skip
            return "".join(itertools.chain.from_iterable(fields)).encode()
        paths, clients = tuple(map(escape, paths)), tuple(map(escape, clients))
        return self._encoder.encode_lines(
            map(
                AccessLine,
                map("{} {} {}".format, methods, paths, statuses),
                request_ids,
                repeat("info"),
                repeat(self._logger),
                moments,
                methods,
                paths,
                routes,
                map(_NO_STATUS.get, statuses, statuses),  # 0 (no answer started) is written as null
                milliseconds,
                clients,
                repeat(self._process),
            )
        )


class _Encoded(dict[Any, str]):
    """Values and their JSON texts, each encoded the first time it is asked for (route templates, statuses)."""

    def __missing__(self, value: Any) -> str:
        text = self[value] = msgspec.json.encode(value).decode()
        return text


#: Bytes that make a text other than plain: the JSON escapes, and control characters.
_NOT_PLAIN = bytes([*range(0x20), 0x7F]) + b'"\\'
_ROUTES = _Encoded()
#: A status of 0 (no answer started) is written as null, and in the event as 0.
_STATUSES = _Encoded({0: "null"})
_DIGITS = _Encoded()
_ADDRESS = operator.itemgetter(0)
#: Statuses written otherwise than as themselves.
_NO_STATUS: dict[int, int | None] = {0: None}


#: Version 2 of marshal's format: binary floats, and no table of the objects written (version 3 on looks every
#: object up in one, to write a repeated one as a reference), which makes ``dumps`` of entries about half as costly.
_MARSHAL_VERSION = 2


class LogProcess:
    """A process of its own that encodes and writes the access lines, so that their encoding takes no time of the
    server process's interpreter (its lock, its core).

    The server's writer thread hands it batches of entries as they were queued (``marshal``, one call a batch)
    through a pipe; the log process writes their lines to the server's log stream (its own descriptor of it), in
    the same format and pieces, and answers each ``sync`` once it has written everything before it, with the
    count of lines it could not write. It ignores SIGINT and SIGTERM (a terminal or a supervisor signals the whole
    group) and ends when the pipe closes: when the server closes it after its last lines, or when the server dies.
    If it cannot be started or dies, the server encodes the lines itself again.
    """

    def __init__(self, process: subprocess.Popen[bytes], answers: int) -> None:
        self._process = process
        assert process.stdin is not None
        self._send = fd_writer(process.stdin.fileno())
        self._answers = answers
        self._alive = True

    @classmethod
    def start(cls, descriptor: int, *, logger: str, process: str | None) -> LogProcess | None:
        """A log process writing to ``descriptor``, or None if it cannot be started."""
        answers, answered = os.pipe()
        root = str(Path(__file__).resolve().parents[2])
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))}
        command = [sys.executable, "-m", "registry.ops.log_writer", logger, process or "", str(answered)]
        try:
            child = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=descriptor, pass_fds=(answered,), env=environment
            )
        except OSError:
            os.close(answers)
            return None
        finally:
            os.close(answered)
        # A batch in one write rather than several into the default 64 KiB (each one more wait for the GIL).
        resize = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux
        if resize is not None and child.stdin is not None:
            with contextlib.suppress(OSError):
                fcntl.fcntl(child.stdin.fileno(), resize, PIPE_BYTES)
        return cls(child, answers)

    def send(self, batch: list[Entry]) -> bool:
        """Hand ``batch`` over; False if the process cannot take it (then the caller writes it)."""
        if not self._alive:
            return False
        try:
            data = marshal.dumps(batch, _MARSHAL_VERSION)
        except ValueError:  # a value marshal does not know (not one a server puts in a scope)
            return False
        try:
            self._send(len(data).to_bytes(4, "little") + data)
        except OSError:
            self._alive = False
            return False
        return True

    def sync(self) -> int | None:
        """Wait until the process has written every line handed over; the lines it could not write (None when it
        is gone)."""
        if not self._alive:
            return None
        try:
            self._send(bytes(4))
            answer = os.read(self._answers, 8)
        except OSError:
            answer = b""
        if len(answer) != 8:
            self._alive = False
            return None
        return int.from_bytes(answer, "little")

    def close(self, timeout: float) -> None:
        """Close the pipe (the process writes what it holds and ends) and wait for the process to end."""
        if self._answers < 0:  # closed already
            return
        self._alive = False
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
        os.close(self._answers)
        self._answers = -1


def _log_process(logger: str, process: str, answered: int) -> None:
    """The log process: batches from standard input, their lines to standard output (the server's log stream)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    output = sys.stdout.fileno()
    lines = AccessLines(fd_writer(output), logger=logger, process=process or None, chunk=chunk_for(output))
    batches = sys.stdin.buffer
    while len(head := batches.read(4)) == 4:
        size = int.from_bytes(head, "little")
        if size == 0:
            os.write(answered, lines.dropped.to_bytes(8, "little"))
            continue
        lines.queue.extend(marshal.loads(batches.read(size)))
        lines.flush()
    lines.flush()


def chunk_for(descriptor: int) -> int | None:
    """How much one write to ``descriptor`` may carry: a batch at once to a regular file (the kernel serialises the
    writes to one open file, so another process's lines cannot land inside it), ``CHUNK`` to anything else (a pipe,
    a socket, a terminal, where a longer write can be split among other processes' writes)."""
    try:
        regular = stat.S_ISREG(os.fstat(descriptor).st_mode)
    except OSError:
        regular = False
    return None if regular else CHUNK


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


__all__ = ["AccessLine", "AccessLines", "Entry", "LogProcess", "chunk_for", "chunks", "escape", "fd_writer"]

if __name__ == "__main__":
    _log_process(sys.argv[1], sys.argv[2], int(sys.argv[3]))
