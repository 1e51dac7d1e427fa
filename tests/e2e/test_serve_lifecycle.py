"""``registry serve`` shutdown and workers (issue 14): SIGTERM ends event streams cleanly at once (a last comment
and the last chunk) instead of cutting them after the shutdown timeout; ``--workers N`` serves from N processes."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

from tests.support.servers import ServerProcess

WEATHER_AGENT = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "weather-agent.td.json").read_text())


def test_sigterm_ends_event_streams_cleanly_and_at_once(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as stream:
        stream.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        received = stream.recv(65536)
        assert b"200 OK" in received
        assert server.process is not None
        started = time.monotonic()
        server.process.terminate()
        while not received.endswith(b"0\r\n\r\n"):
            chunk = stream.recv(65536)
            if not chunk:
                break
            received += chunk
    took = time.monotonic() - started
    assert b"the server is shutting down; reconnect with Last-Event-ID" in received
    assert received.endswith(b"0\r\n\r\n"), received[-200:]  # the last chunk: the response ended, not cut off
    server.process.wait(10)
    assert server.process.returncode == 0
    assert took < 3, f"the stream ended {took:.1f} s after SIGTERM"


def test_workers_serve_from_several_processes(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server({"REGISTRY_WORKERS": "2"})
    assert server.process is not None
    workers = psutil.Process(server.process.pid).children()
    assert len([child for child in workers if "spawn_main" in " ".join(child.cmdline())]) == 2
    document = {**WEATHER_AGENT, "id": "urn:test:workers:1"}
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        created = client.put(
            "/things/urn:test:workers:1",
            content=json.dumps(document),
            headers={"Content-Type": "application/td+json"},
        )
        assert created.status_code == 201, created.text
        for _ in range(20):
            with httpx.Client(base_url=server.base_url, timeout=30) as fresh:  # new connections: any worker
                assert fresh.get("/things/urn:test:workers:1").status_code == 200
    server.process.terminate()
    server.process.wait(20)
    assert server.process.returncode == 0
