"""Logs an operator can read and trust: one JSON object a line off a terminal, an access line per request with the
request id the response echoes, control characters escaped, an unexpected error logged once without traceback."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable

import httpx
import pytest
from litestar import Litestar, get
from litestar.testing import TestClient

from registry.http.problems import exception_handlers
from registry.ops.logs import CHATTY, RateLimit, configure_logging
from tests.support.servers import ServerProcess


def _access_lines(server: ServerProcess) -> list[dict[str, object]]:
    return [line for line in map(json.loads, server.output().splitlines()) if line.get("logger") == "registry.access"]


def _wait_for_line(server: ServerProcess, found: Callable[[dict[str, object]], bool]) -> dict[str, object]:
    deadline = time.monotonic() + 15  # returns at the line: a limit only for a failing run (or a loaded machine)
    while time.monotonic() < deadline:
        for line in _access_lines(server):
            if found(line):
                return line
        time.sleep(0.05)
    raise AssertionError(f"no such access line in:\n{server.output()}")


def test_json_lines_with_request_ids_and_escaped_control_characters(
    start_server: Callable[..., ServerProcess],
) -> None:
    server = start_server({"REGISTRY_LOG_LEVEL": "info", "REGISTRY_LOG_FORMAT": "json"})
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        given = http.get("/things/urn:test:x%0A%1B[31mforged", headers={"X-Request-ID": "trace-42.a:b"})
        assert given.status_code in (400, 404)  # an id with control characters may be refused outright
        assert given.headers["x-request-id"] == "trace-42.a:b"
        replaced = http.get("/things", headers={"X-Request-ID": "not a plausible id"})
        new_id = replaced.headers["x-request-id"]
        assert new_id != "not a plausible id"
        assert len(new_id) == 32
    line = _wait_for_line(server, lambda line: line.get("request_id") == "trace-42.a:b")
    # The route template once routed (an id refused before routing has none); never the id requested.
    assert line["route"] in (None, "/things/{thing_id}")
    assert line["status"] == given.status_code
    assert line["method"] == "GET"
    assert isinstance(line["duration_ms"], float)
    assert line["path"] == "/things/urn:test:x\\x0a\\x1b[31mforged"
    _wait_for_line(server, lambda line: line.get("request_id") == new_id and line["route"] == "/things")
    output = server.output()
    assert "\x1b" not in output
    for raw in output.splitlines():  # every line of the process, uvicorn's included, is one JSON object
        assert isinstance(json.loads(raw), dict), raw


def test_console_format_is_readable_and_escaped(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server({"REGISTRY_LOG_LEVEL": "info", "REGISTRY_LOG_FORMAT": "console"})
    answer = httpx.get(server.base_url + "/things/urn:test:y%0Ainjected-line", headers={"X-Request-ID": "console-1"})
    deadline = time.monotonic() + 15
    while "console-1" not in server.output() and time.monotonic() < deadline:
        time.sleep(0.05)
    [line] = [line for line in server.output().splitlines() if "console-1" in line]
    assert f"GET /things/urn:test:y\\x0ainjected-line {answer.status_code}" in line
    assert not any(line.startswith("injected-line") for line in server.output().splitlines())


def test_an_unexpected_error_is_logged_once_at_error_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    @get("/boom", sync_to_thread=False)
    def boom() -> None:
        raise RuntimeError("broken\nsecond line")

    app = Litestar([boom], exception_handlers=exception_handlers, logging_config=None)
    with caplog.at_level(logging.DEBUG), TestClient(app) as client:
        response = client.get("/boom")
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("application/problem+json")
    [record] = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert record.name == "registry.http.problems"
    assert "RuntimeError" in record.getMessage()
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)
    assert not [other for other in caplog.records if other is not record and other.exc_info]  # logged once


def test_warnings_are_rate_limited_per_message() -> None:
    limit = RateLimit(burst=3, interval=0.3)

    def record(message: str) -> logging.LogRecord:
        return logging.LogRecord("registry.test", logging.WARNING, __file__, 1, message, None, None)

    passed = [limit.filter(record("database unavailable")) for _ in range(50)]
    assert passed.count(True) == 3
    assert limit.filter(record("another message"))
    time.sleep(0.35)
    after = record("database unavailable")
    assert limit.filter(after)
    assert after.suppressed == 47  # type: ignore[attr-defined]
    info = logging.LogRecord("registry.test", logging.INFO, __file__, 1, "database unavailable", None, None)
    assert all(limit.filter(info) for _ in range(50))


def test_embedded_postgresql_chatter_only_at_debug() -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging("info", "json")
        assert all(logging.getLogger(name).getEffectiveLevel() == logging.WARNING for name in CHATTY)
        configure_logging("debug", "json")
        assert all(logging.getLogger(name).getEffectiveLevel() == logging.DEBUG for name in CHATTY)
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        for name in CHATTY:
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_sigterm_writes_every_access_line_answered(start_server: Callable[..., ServerProcess]) -> None:
    """The lines are written by a log process of the server's, in batches: those of requests answered just before
    SIGTERM are written all the same, once each."""
    server = start_server({"REGISTRY_LOG_LEVEL": "info", "REGISTRY_LOG_FORMAT": "json"})
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        for number in range(300):
            http.get("/things", params={"limit": 1}, headers={"X-Request-ID": f"last-{number}"})
    server.stop()
    assert server.process is not None
    assert server.process.returncode == 0
    logged = [line["request_id"] for line in _access_lines(server) if str(line.get("request_id")).startswith("last-")]
    assert logged == [f"last-{number}" for number in range(300)]
