"""The access log off the request path: a request queues its fields, a thread writes them as JSON lines of the
same fields as every other log line, no line is lost when the process stops, and a full queue drops lines and
counts them in /metrics rather than making requests wait."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.types import Message, Receive, Scope, Send
from prometheus_client import REGISTRY, generate_latest

import registry.ops.logs as logs
import registry.ops.metrics  # noqa: F401  (registers the collector of dropped access lines)
from registry.http.middleware.access_log import access_logged
from registry.http.middleware.boundary import input_boundary
from registry.http.middleware.sites import SitePolicy
from registry.ops.log_writer import CHUNK, AccessLines, Entry, LogProcess, chunk_for, chunks

PATH = "/things/urn:test:x\n\x1b[31mforged"


def entry(number: int = 1, *, path: str = "/things/urn:test:1", status: int = 200) -> Entry:
    client = ("127.0.0.1", 40000)
    return (time.perf_counter(), f"request-{number}", "GET", path, "/things/{thing_id}", status, 0.0012345, client)


def written(parts: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in b"".join(parts).splitlines()]


def test_a_line_has_every_field_escaped() -> None:
    parts: list[bytes] = []
    lines = AccessLines(parts.append, process="serve")
    before = dt.datetime.now(dt.UTC)
    lines.put(entry(path=PATH, status=0))
    lines.flush()
    [line] = written(parts)
    timestamp = line.pop("timestamp")
    assert timestamp.endswith("Z")
    assert before <= dt.datetime.fromisoformat(timestamp) <= dt.datetime.now(dt.UTC)
    assert line == {
        "event": "GET /things/urn:test:x\\x0a\\x1b[31mforged 0",
        "request_id": "request-1",
        "level": "info",
        "logger": "registry.access",
        "method": "GET",
        "path": "/things/urn:test:x\\x0a\\x1b[31mforged",
        "route": "/things/{thing_id}",
        "status": None,  # no answer started
        "duration_ms": 1.234,
        "client": "127.0.0.1",
        "process": "serve",
    }
    assert b"\x1b" not in b"".join(parts)


def test_a_line_without_a_process_name_has_no_process_field() -> None:
    parts: list[bytes] = []
    lines = AccessLines(parts.append)
    lines.put(entry())
    lines.flush()
    [line] = written(parts)
    assert "process" not in line
    assert line["status"] == 200


def test_no_line_is_lost_when_the_writer_closes() -> None:
    parts: list[bytes] = []
    lines = AccessLines(parts.append, interval=0.01).start()
    for number in range(20_000):
        lines.put(entry(number))
        if number % 5_000 == 0:
            time.sleep(0.02)  # the thread writes some on its own
    lines.close()
    assert [line["request_id"] for line in written(parts)] == [f"request-{number}" for number in range(20_000)]
    assert lines.dropped == 0
    assert all(len(part) <= 4096 and part.endswith(b"\n") for part in parts)


def test_a_full_queue_drops_lines_and_counts_them() -> None:
    parts: list[bytes] = []
    lines = AccessLines(parts.append, capacity=10)
    for number in range(15):
        lines.put(entry(number))
    assert lines.dropped == 5
    lines.flush()
    assert [line["request_id"] for line in written(parts)] == [f"request-{number}" for number in range(10)]


def test_lines_a_stream_refuses_are_counted() -> None:
    def broken(data: bytes) -> None:
        raise BrokenPipeError

    lines = AccessLines(broken)
    for number in range(3):
        lines.put(entry(number))
    lines.flush()
    assert lines.dropped == 3


def test_pieces_end_at_line_ends() -> None:
    data = b"".join(b"x" * length + b"\n" for length in (10, 3000, 2000, 9000, 1, 4095))
    pieces = chunks(data)
    assert b"".join(pieces) == data
    assert all(piece.endswith(b"\n") for piece in pieces)
    assert [len(piece) for piece in pieces] == [3012, 2001, 9001, 2, 4096]


def test_a_batch_is_one_write_to_a_regular_file_and_pieces_elsewhere(tmp_path: Path) -> None:
    with (tmp_path / "log").open("wb") as file:
        assert chunk_for(file.fileno()) is None
    reading, writing = os.pipe()
    try:
        assert chunk_for(writing) == CHUNK
    finally:
        os.close(reading)
        os.close(writing)
    for chunk in (None, CHUNK):
        parts: list[bytes] = []
        lines = AccessLines(parts.append, chunk=chunk)
        for number in range(40):
            lines.put(entry(number, path="/things/urn:test:" + "x" * 200))
        lines.flush()
        if chunk is None:
            assert len(parts) == 1
        else:
            assert len(parts) > 1
            assert all(len(part) <= CHUNK and part.endswith(b"\n") for part in parts)
        assert [line["request_id"] for line in written(parts)] == [f"request-{number}" for number in range(40)]


@pytest.fixture
def json_logging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``configure_logging`` with JSON output to a file as stderr; the test's logging restored afterwards."""
    log_file = tmp_path / "stderr.log"
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    with log_file.open("w") as stream:
        monkeypatch.setattr(sys, "stderr", stream)
        try:
            logs.configure_logging("info", "json")
            yield log_file
        finally:
            logs._close_access_lines()
            root.handlers[:] = saved[0]
            root.setLevel(saved[1])


async def _answer(scope: Scope, receive: Receive, send: Send) -> None:
    logging.getLogger("registry.test").info("inside the request")
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _request(request_id: str) -> list[Message]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope: Any = {
        "type": "http",
        "method": "GET",
        "path": PATH,
        "headers": [(b"host", b"127.0.0.1:8080"), (b"x-request-id", request_id.encode())],
        "client": ("192.0.2.7", 40000),
        "path_template": "/things/{thing_id}",
    }
    await access_logged(_answer)(scope, receive, send)
    return sent


def test_the_middleware_queues_the_line_and_every_line_of_the_request_has_its_id(json_logging: Path) -> None:
    sent = asyncio.run(_request("trace-7"))
    assert (b"x-request-id", b"trace-7") in sent[0]["headers"]
    assert logs.REQUEST_ID.get() is None  # reset once answered
    logs.flush_access_lines()
    lines = [json.loads(line) for line in json_logging.read_text().splitlines()]
    inside, access = lines  # the warning is written at once, the access line by the writer
    assert inside["event"] == "inside the request"
    assert inside["request_id"] == "trace-7"
    assert access["request_id"] == "trace-7"
    assert (access["logger"], access["method"], access["status"]) == ("registry.access", "GET", 404)
    assert access["path"] == "/things/urn:test:x\\x0a\\x1b[31mforged"
    assert access["client"] == "192.0.2.7"


def test_the_boundary_logs_what_it_refuses_and_echoes_the_id(json_logging: Path) -> None:
    """The access log is part of the input boundary's layer: a request refused there (a Host this directory does
    not answer to) is answered with its id and logged; one let through reaches the application, once."""
    reached: list[str] = []

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope["path"])
        await _answer(scope, receive, send)

    layer = input_boundary(application, max_url_bytes=8192, sites=SitePolicy(), access_log=True)

    async def request(host: bytes, request_id: bytes) -> list[Message]:
        sent: list[Message] = []

        async def send(message: Message) -> None:
            sent.append(message)

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        headers = [(b"host", host), (b"x-request-id", request_id)]
        scope: Any = {"type": "http", "method": "GET", "path": "/things", "headers": headers, "client": None}
        await layer(scope, receive, send)
        return sent

    refused = asyncio.run(request(b"evil.example", b"trace-8"))
    served = asyncio.run(request(b"127.0.0.1:8080", b"bad id with spaces"))
    assert refused[0]["status"] == 400
    assert (b"x-request-id", b"trace-8") in refused[0]["headers"]
    assert served[0]["status"] == 404
    assert reached == ["/things"]
    [new_id] = [value for name, value in served[0]["headers"] if name == b"x-request-id"]
    assert re.fullmatch(rb"[0-9a-f]{32}", new_id)  # a new id: the one sent was not a plausible one
    logs.flush_access_lines()
    access = [
        line for line in map(json.loads, json_logging.read_text().splitlines()) if line["logger"] == "registry.access"
    ]
    assert [(line["request_id"], line["status"], line["client"]) for line in access] == [
        ("trace-8", 400, ""),
        (new_id.decode(), 404, ""),
    ]


def test_lines_queued_at_exit_are_written(json_logging: Path) -> None:
    for number in range(50):
        asyncio.run(_request(f"exit-{number}"))
    logs._close_access_lines()  # what the process runs at exit
    lines = [json.loads(line) for line in json_logging.read_text().splitlines()]
    access = [line["request_id"] for line in lines if line["logger"] == "registry.access"]
    assert access == [f"exit-{number}" for number in range(50)]


def test_dropped_lines_are_in_the_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = AccessLines(io.BytesIO().write, capacity=0)
    monkeypatch.setattr(logs, "access_writer", lines)
    before = logs.access_lines_dropped()
    for number in range(3):
        logs.access_line(logging.getLogger("registry.access"), f"r{number}", "GET", "/", None, 200, 0.001, "")
    assert logs.access_lines_dropped() == before + 3
    exposed = generate_latest(REGISTRY).decode()
    assert f"registry_access_log_dropped_total {float(before + 3)}" in exposed


def test_the_writer_thread_is_named_and_a_daemon(json_logging: Path) -> None:
    [thread] = [thread for thread in threading.enumerate() if thread.name == "registry-access-log"]
    assert thread.daemon


def _file_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_log_process_writes_the_lines_and_ignores_sigterm(tmp_path: Path) -> None:
    log_file = tmp_path / "access.log"
    with log_file.open("wb") as stream:
        child = LogProcess.start(stream.fileno(), logger="registry.access", process="serve")
        assert child is not None
        here: list[bytes] = []  # nothing is written here while the log process takes the lines
        lines = AccessLines(here.append, process="serve", log_process=child)
        lines.put(entry(1, path=PATH))
        lines.flush()  # written when it returns
        [line] = _file_lines(log_file)
        assert (line["request_id"], line["path"], line["process"]) == (
            "request-1",
            "/things/urn:test:x\\x0a\\x1b[31mforged",
            "serve",
        )
        child._process.send_signal(signal.SIGTERM)  # a supervisor signals the group: the lines still come
        for number in range(2, 1002):
            lines.put(entry(number))
        lines.close()
        assert child._process.returncode == 0
    assert [line["request_id"] for line in _file_lines(log_file)] == [f"request-{n}" for n in range(1, 1002)]
    assert lines.dropped == 0
    assert here == []


def test_lines_are_written_here_when_the_log_process_is_gone(tmp_path: Path) -> None:
    log_file = tmp_path / "access.log"
    with log_file.open("wb") as stream:
        child = LogProcess.start(stream.fileno(), logger="registry.access", process=None)
        assert child is not None
        parts: list[bytes] = []
        lines = AccessLines(parts.append, log_process=child)
        child._process.kill()
        child._process.wait()
        for number in range(3):
            lines.put(entry(number))
        lines.flush()
        lines.close()
    assert [line["request_id"] for line in written(parts)] == [f"request-{n}" for n in range(3)]


def test_configured_json_logging_starts_a_log_process_with_the_first_line(json_logging: Path) -> None:
    writer = logs.access_writer
    assert writer is not None
    writer.flush()
    assert writer._log_process is None  # a process that logs no request (the SPARQL worker) starts none
    asyncio.run(_request("first-1"))
    logs.flush_access_lines()
    assert writer._log_process is not None
    [line] = [line for line in _file_lines(json_logging) if line["logger"] == "registry.access"]
    assert line["request_id"] == "first-1"
