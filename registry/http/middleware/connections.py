"""Connection hardening for ``registry serve``: the HTTP/1.1 protocol uvicorn runs, with the limits it lacks.

uvicorn (httptools) waits for a request's headers for ever and accepts any number of connections, so a few
hundred half-open connections (slowloris) hold the process at its file-descriptor limit. This protocol adds:

- a header-read deadline (``REGISTRY_HEADER_TIMEOUT``): the request line and headers must arrive within it, or the
  connection gets 408 and is closed; it covers a new connection that sends nothing, too. One sweep per process
  checks every connection each tenth of the deadline (at most each second), instead of a timer per request,
  which costs a cached GET a measurable share of its CPU;
- a body-read deadline (``REGISTRY_BODY_TIMEOUT``): once the headers are in, the whole body must arrive within
  it, or the request gets 408 and the connection is closed (a body trickled a byte every few seconds would hold
  the connection for ever). Time the server itself does not read (the application has not asked for more yet,
  or has not yet sent ``100 Continue``) does not count; the same sweep checks it;
- a limit on the request head (``REGISTRY_MAX_URL_BYTES`` + ``REGISTRY_MAX_HEADER_BYTES``): 431 above;
- at most ``REGISTRY_MAX_CONNECTIONS`` connections, ``REGISTRY_MAX_CONNECTIONS_PER_CLIENT`` from one client
  (an IPv6 client counted by its /64, as the rate limits count it): beyond them a connection is answered 503 and
  closed at once. Connections from a trusted proxy (``REGISTRY_TRUSTED_PROXIES``) carry many clients and count
  only towards the total; the proxy bounds each client's connections.

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
from registry.http.middleware.addresses import TrustedProxies, client_key
from registry.http.middleware.boundary import BODY_TIMED_OUT


@dataclasses.dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_timeout: float
    body_timeout: float
    max_head_bytes: int
    max_connections: int
    max_connections_per_client: int
    trusted_proxies: TrustedProxies = dataclasses.field(default_factory=TrustedProxies)

    @classmethod
    def of(cls, settings: Settings) -> ConnectionLimits:
        return cls(
            header_timeout=settings.header_timeout,
            body_timeout=settings.body_timeout,
            max_head_bytes=settings.max_url_bytes + settings.max_header_bytes,
            max_connections=settings.max_connections,
            max_connections_per_client=settings.max_connections_per_client,
            trusted_proxies=TrustedProxies.of(settings.trusted_proxies),
        )


@functools.cache
def _limits() -> ConnectionLimits:
    """Read once per process from the environment (``registry serve`` exports its flags there, so the workers of
    ``--workers N``, started afresh, see the same values)."""
    return ConnectionLimits.of(Settings.from_env())


#: Open connections per client (``client_key`` of its address), in this process.
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


#: Connections of this process, for the sweep that times out slow heads and bodies; the sweep's next and last run.
_open: set[HardenedHttpProtocol] = set()
_sweep: asyncio.TimerHandle | None = None
_last_sweep = 0.0


def _sweep_interval() -> float:
    limits = _limits()
    return min(1.0, max(0.05, min(limits.header_timeout, limits.body_timeout) / 10))


def _schedule_sweep(loop: asyncio.AbstractEventLoop) -> None:
    global _sweep, _last_sweep
    if _sweep is None:
        _last_sweep = loop.time()
        _sweep = loop.call_later(_sweep_interval(), _time_out_slow_requests, loop)


def _time_out_slow_requests(loop: asyncio.AbstractEventLoop) -> None:
    global _sweep, _last_sweep
    now = loop.time()
    since_last, _last_sweep = now - _last_sweep, now
    limits = _limits()
    oldest_head, oldest_body = now - limits.header_timeout, now - limits.body_timeout
    for connection in list(_open):
        if connection.head_started is not None and connection.head_started < oldest_head:
            connection.head_too_slow()
        elif connection.body_started is not None:
            if connection.body_waits_for_server():
                connection.body_started = min(now, connection.body_started + since_last)
            elif connection.body_started < oldest_body:
                connection.body_too_slow()
    _sweep = loop.call_later(_sweep_interval(), _time_out_slow_requests, loop) if _open else None


def connection_key(peer: str, trusted: TrustedProxies) -> str | None:
    """Whom a connection from ``peer`` counts against for the per-client cap: None for a trusted proxy."""
    return None if trusted.trusts(peer) else client_key(peer)


class HardenedHttpProtocol(HttpToolsProtocol):
    #: The client this connection counts against (``connection_key``); None when it counts only in the total.
    _address: str | None = None
    _head_bytes = 0
    _reading_head = True
    #: ``loop.time()`` when the head being read started; None between requests (uvicorn's idle timeout's time).
    head_started: float | None = None
    #: ``loop.time()`` when the body being read started, moved on by the time the server did not read it; None
    #: while no body is awaited.
    body_started: float | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        limits = _limits()
        self._address = connection_key(self.client[0] if self.client else "", limits.trusted_proxies)
        if self._address is not None:
            _per_client[self._address] += 1
        if len(self.connections) > limits.max_connections:
            self._refuse(503, f"The directory serves at most {limits.max_connections} connections; retry shortly")
        elif self._address is not None and _per_client[self._address] > limits.max_connections_per_client:
            self._refuse(503, f"At most {limits.max_connections_per_client} connections per client address; reuse them")
        else:
            self.head_started = self.loop.time()
            _open.add(self)
            _schedule_sweep(self.loop)

    def connection_lost(self, exc: Exception | None) -> None:
        _open.discard(self)
        if self._address is not None:
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
        previous = self.cycle
        super().on_headers_complete()
        if self.cycle is not previous:
            # A request without a body completes in the same parser call, before any sweep can see this.
            self.body_started = self.loop.time()

    def on_message_complete(self) -> None:
        self.body_started = None
        super().on_message_complete()

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

    def body_waits_for_server(self) -> bool:
        """Whether the server, not the client, holds the body up: reading paused until the application asks for
        more, or ``100 Continue`` not sent yet."""
        return self.flow.read_paused or (self.cycle is not None and self.cycle.waiting_for_100_continue)

    def body_too_slow(self) -> None:
        """408 to a request whose body did not arrive in time (unless its answer has started), and close."""
        self.body_started = None
        cycle = self.cycle
        if self.transport.is_closing() or cycle is None:
            return
        detail = f"The request body did not arrive within {_limits().body_timeout:g} s"
        if not cycle.response_started:
            # The application reading the body gets a disconnect; the mark lets it record the 408 sent here.
            cycle.scope[BODY_TIMED_OUT] = detail  # type: ignore[literal-required]
            self.transport.write(_problem(408, detail))
        # What the application sends from now on is dropped (the transport would still take it while closing).
        cycle.disconnected = True
        cycle.message_event.set()
        self.transport.close()

    def _refuse(self, status: int, detail: str) -> None:
        self.head_started = None
        if not self.transport.is_closing():
            self.transport.write(_problem(status, detail))
            self.transport.close()


__all__ = ["ConnectionLimits", "HardenedHttpProtocol", "when_draining"]
