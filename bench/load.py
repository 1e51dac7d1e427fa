"""A lean HTTP/1.1 load client: N keep-alive connections on asyncio streams, each sending the next request as soon
as the previous answer is read.

Why not httpx: its per-request cost (about 0.5 ms of client CPU) caps it near 2,000 requests/s on one core, below
what a bare Litestar handler serves, so it would measure itself. This client builds request bytes up front and
parses only the status line and the framing (Content-Length or chunked), a few microseconds each.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: A request: method, path (already percent-encoded), body (or b"") and its content type.
Request = tuple[str, str, bytes, str]


@dataclass
class Outcome:
    """What one phase measured: requests answered, their latencies (s) and statuses, and how long it ran."""

    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def requests(self) -> int:
        return len(self.latencies)

    @property
    def rate(self) -> float:
        return self.requests / self.elapsed if self.elapsed else 0.0

    def quantile_ms(self, fraction: float) -> float:
        if len(self.latencies) < 2:
            return self.latencies[0] * 1000 if self.latencies else float("nan")
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[round(fraction * 100) - 1] * 1000

    def count(self, predicate: Callable[[int], bool]) -> int:
        return sum(number for status, number in self.statuses.items() if predicate(status))


def encode(request: Request, host: str) -> bytes:
    method, path, body, content_type = request
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"
    if body or method in ("PUT", "POST", "PATCH"):
        head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        lowered = name.strip().lower()
        if lowered == b"content-length":
            length = int(value)
        elif lowered == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
    if chunked:
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            await reader.readexactly(size + 2)
        await reader.readuntil(b"\r\n")  # the empty trailer
    elif length:
        await reader.readexactly(length)
    return status


async def drive(
    host: str, port: int, next_request: Callable[[int, int], Request], connections: int, duration: float
) -> Outcome:
    """Send requests from ``next_request(connection, counter)`` on ``connections`` connections for ``duration``
    seconds."""
    outcome = Outcome()
    authority = f"{host}:{port}"
    deadline = time.perf_counter() + duration

    async def connection_loop(number: int) -> None:
        reader, writer = await asyncio.open_connection(host, port)
        counter = 0
        try:
            while time.perf_counter() < deadline:
                payload = encode(next_request(number, counter), authority)
                counter += 1
                started = time.perf_counter()
                writer.write(payload)
                status = await _read_response(reader)
                outcome.latencies.append(time.perf_counter() - started)
                outcome.statuses[status] = outcome.statuses.get(status, 0) + 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection_loop(number) for number in range(connections)))
    outcome.elapsed = time.perf_counter() - started
    return outcome
