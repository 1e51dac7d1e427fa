"""Optional tracing: with REGISTRY_TRACING=true a server exports a span per request over OTLP/HTTP to the endpoint
OpenTelemetry's own variables name (here a receiver of the test's own); off by default."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from registry.config import ConfigError, Settings
from registry.ops.tracing import tracing_plugins
from tests.support.servers import ServerProcess


class _Receiver(http.server.BaseHTTPRequestHandler):
    spans: list[str] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                self.spans.extend(span.name for span in scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def receiver() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_spans_reach_the_configured_collector(receiver: str, start_server: Callable[..., ServerProcess]) -> None:
    _Receiver.spans.clear()
    server = start_server(
        {"REGISTRY_TRACING": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    )
    assert httpx.get(server.base_url + "/things/urn:test:traced").status_code == 404
    deadline = time.monotonic() + 10
    while not any("/things/{thing_id}" in name for name in _Receiver.spans) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any("/things/{thing_id}" in name for name in _Receiver.spans), _Receiver.spans


def test_tracing_is_off_by_default() -> None:
    assert tracing_plugins(Settings()) == []


def test_tracing_without_its_packages_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(ConfigError, match=r"its tracing extra \(pip install '\.\[tracing\]'"):
        tracing_plugins(Settings(tracing=True))
