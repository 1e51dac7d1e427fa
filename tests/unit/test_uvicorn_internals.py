"""The parts of uvicorn's internal HTTP protocol that ``registry.http.middleware.connections.HardenedHttpProtocol``
builds on.

uvicorn does not promise these (``HttpToolsProtocol`` is not public API), so pyproject.toml bounds uvicorn to the
minor versions tested. When a new uvicorn fails here, the connection limits and deadlines of ``registry serve``
no longer hold: adapt ``registry/http/middleware/connections.py`` to the new internals before widening the bound.
"""

from __future__ import annotations

import asyncio
import inspect

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

#: The methods the hardened protocol overrides or calls, with the parameters it passes.
OVERRIDDEN = {
    "connection_made": ["self", "transport"],
    "connection_lost": ["self", "exc"],
    "data_received": ["self", "data"],
    "on_headers_complete": ["self"],
    "on_message_complete": ["self"],
    "on_response_complete": ["self"],
    "shutdown": ["self"],
}


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closing = False
        self.paused = False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"peername": ("192.0.2.7", 50000), "sockname": ("127.0.0.1", 8080)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


async def _app(scope: object, receive: object, send: object) -> None:
    await asyncio.sleep(3600)


@pytest.mark.parametrize(("name", "parameters"), OVERRIDDEN.items())
def test_the_overridden_methods_keep_their_signatures(name: str, parameters: list[str]) -> None:
    method = getattr(HttpToolsProtocol, name, None)
    assert callable(method), f"uvicorn's HttpToolsProtocol has no {name}() any more"
    assert list(inspect.signature(method).parameters) == parameters


async def test_the_connection_and_request_state_read_by_the_hardened_protocol() -> None:
    state = ServerState()
    protocol = HttpToolsProtocol(
        Config(app=_app, log_config=None, ws="none"), state, {}, _loop=asyncio.get_running_loop()
    )
    transport = FakeTransport()
    protocol.connection_made(transport)
    try:
        # The set of open connections the total is counted in, the peer, the loop, the transport.
        assert protocol.connections is state.connections
        assert protocol in protocol.connections
        assert protocol.client == ("192.0.2.7", 50000)
        assert protocol.loop is asyncio.get_running_loop()
        assert protocol.transport is transport
        assert protocol.cycle is None
        assert protocol.flow.read_paused is False

        protocol.data_received(b"POST /things HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        cycle = protocol.cycle
        assert isinstance(cycle, RequestResponseCycle)
        assert cycle.waiting_for_100_continue is True
        assert cycle.response_started is False
        assert cycle.disconnected is False
        assert isinstance(cycle.message_event, asyncio.Event)
        assert isinstance(cycle.scope, dict)
        assert cycle.scope["path"] == "/things"
    finally:
        protocol.connection_lost(None)
        for task in list(state.tasks):
            task.cancel()
        await asyncio.gather(*state.tasks, return_exceptions=True)
    assert protocol not in state.connections
