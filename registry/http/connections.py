"""Connection hardening for ``registry serve``: the HTTP/1.1 protocol uvicorn runs, with the limits it lacks.

uvicorn (httptools) waits for a request's headers for ever and accepts any number of connections, so a few
hundred half-open connections (slowloris) hold the process at its file-descriptor limit. This protocol adds:

- a header-read deadline (``REGISTRY_HEADER_TIMEOUT``): the request line and headers must arrive within it, or the
  connection gets 408 and is closed; it covers a new connection that sends nothing, too. One sweep per process
  checks every connection each tenth of the deadline (at most each second), instead of a timer per request,
  which cost a cached GET ~8 %;
- a limit on the request head (``REGISTRY_MAX_URL_BYTES`` + ``REGISTRY_MAX_HEADER_BYTES``): 431 above;
- at most ``REGISTRY_MAX_CONNECTIONS`` connections, ``REGISTRY_MAX_CONNECTIONS_PER_CLIENT`` from one address:
  beyond them a connection is answered 503 and closed at once.

Idle keep-alive connections are closed by uvicorn after ``REGISTRY_IDLE_TIMEOUT``. Limits are per process (with
``--workers N`` each worker holds its own).

On SIGTERM uvicorn stops accepting, lets in-flight requests finish and closes idle connections; streams that never
finish (SSE) would hold the shutdown until its timeout and then be cut off. ``when_draining`` registers what ends
them at once (the event hub's last comment), called when the shutdown starts.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
from collections.abc import Callable
from http import HTTPStatus

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from registry.config import Settings


@dataclasses.dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_timeout: float
    max_head_bytes: int
    max_connections: int
    max_connections_per_client: int

    @classmethod
    def of(cls, settings: Settings) -> ConnectionLimits:
        return cls(
            header_timeout=settings.header_timeout,
            max_head_bytes=settings.max_url_bytes + settings.max_header_bytes,
            max_connections=settings.max_connections,
            max_connections_per_client=settings.max_connections_per_client,
        )


@functools.cache
def _limits() -> ConnectionLimits:
    """Read once per process from the environment (``registry serve`` exports its flags there, so the workers of
    ``--workers N``, started afresh, see the same values)."""
    return ConnectionLimits.of(Settings.from_env())


#: Open connections per client address, in this process.
_per_client: collections.Counter[str] = collections.Counter()
#: Called once when the server starts shutting down.
_drain_hooks: list[Callable[[], None]] = []


def when_draining(hook: Callable[[], None]) -> Callable[[], None]:
    """Call ``hook`` when the server starts a graceful shutdown; returns what unregisters it."""
    _drain_hooks.append(hook)
    return lambda: _drain_hooks.remove(hook) if hook in _drain_hooks else None


def _drain() -> None:
    hooks = list(_drain_hooks)
    _drain_hooks.clear()
    for hook in hooks:
        hook()


def _problem(status: int, detail: str) -> bytes:
    body = msgspec.json.encode(
        {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status, "detail": detail}
    )
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "content-type: application/problem+json; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


#: Connections of this process, for the sweep that times out slow heads; the sweep's next run.
_open: set[HardenedHttpProtocol] = set()
_sweep: asyncio.TimerHandle | None = None


def _sweep_interval() -> float:
    return min(1.0, max(0.05, _limits().header_timeout / 10))


def _time_out_slow_heads(loop: asyncio.AbstractEventLoop) -> None:
    global _sweep
    oldest = loop.time() - _limits().header_timeout
    for connection in [each for each in _open if each.head_started is not None and each.head_started < oldest]:
        connection.head_too_slow()
    _sweep = loop.call_later(_sweep_interval(), _time_out_slow_heads, loop) if _open else None


class HardenedHttpProtocol(HttpToolsProtocol):
    _address = ""
    _head_bytes = 0
    _reading_head = True
    #: ``loop.time()`` when the head being read started; None between requests (uvicorn's idle timeout's time).
    head_started: float | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        global _sweep
        super().connection_made(transport)
        limits = _limits()
        self._address = self.client[0] if self.client else ""
        _per_client[self._address] += 1
        if len(self.connections) > limits.max_connections:
            self._refuse(503, f"The directory serves at most {limits.max_connections} connections; retry shortly")
        elif _per_client[self._address] > limits.max_connections_per_client:
            self._refuse(503, f"At most {limits.max_connections_per_client} connections per client address; reuse them")
        else:
            self.head_started = self.loop.time()
            _open.add(self)
            if _sweep is None:
                _sweep = self.loop.call_later(_sweep_interval(), _time_out_slow_heads, self.loop)

    def connection_lost(self, exc: Exception | None) -> None:
        _open.discard(self)
        _per_client[self._address] -= 1
        if _per_client[self._address] <= 0:
            del _per_client[self._address]
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._reading_head:
            # Only the head counts: the body (or the next request) may follow in the same chunk.
            end = data.find(b"\r\n\r\n")
            self._head_bytes += len(data) if end < 0 else end + 4
            if self._head_bytes > _limits().max_head_bytes:
                self._refuse(431, f"The request line and headers exceed {_limits().max_head_bytes} bytes")
                return
            if self.head_started is None:
                self.head_started = self.loop.time()
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._head_bytes = 0
        self.head_started = None
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        # The next request on this connection starts its head; uvicorn's idle timeout covers the wait for it.
        self._reading_head = True
        super().on_response_complete()

    def shutdown(self) -> None:
        """uvicorn calls this on every connection as the graceful shutdown starts: end the endless streams first."""
        _drain()
        super().shutdown()

    def head_too_slow(self) -> None:
        self.head_started = None
        if self._reading_head and not self.transport.is_closing():
            self._refuse(408, f"The request headers did not arrive within {_limits().header_timeout:g} s")

    def _refuse(self, status: int, detail: str) -> None:
        self.head_started = None
        if not self.transport.is_closing():
            self.transport.write(_problem(status, detail))
            self.transport.close()


__all__ = ["ConnectionLimits", "HardenedHttpProtocol", "when_draining"]
