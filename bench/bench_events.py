"""Live-directory benchmark: SSE fan-out latency and lease renewal throughput of ONE server process.

    python bench/bench_events.py --subscribers 1000 --writes 30 --renew-seconds 10

Starts `registry serve` on a fresh database (local PostgreSQL), then
1. opens N concurrent ``/events`` subscriptions (raw sockets, so the client is cheap), writes descriptions one at
   a time and measures, per subscriber and write, the delay from the write's acknowledgement (HTTP response) to
   the event's arrival;
2. renews the leases of registered descriptions from C keep-alive connections for T seconds.
Targets (issue 5): p99 fan-out latency <= 250 ms with 1,000 subscribers; >= 2,000 renewals/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.rounds import add_logging_option, machine, served, use_logging_option
from tests.support.servers import ServerProcess, fresh_database, postgres_server


def _document(title: str) -> bytes:
    return json.dumps(
        {
            "@context": "https://www.w3.org/2022/wot/td/v1.1",
            "id": f"urn:bench:{uuid.uuid4()}",
            "title": title,
            "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
            "security": "nosec_sc",
            "registration": {"ttl": 3600},
        }
    ).encode()


async def _request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes) -> tuple[int, bytes]:
    """One HTTP/1.1 exchange on a keep-alive connection (responses carry Content-Length)."""
    writer.write(raw)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    body = await reader.readexactly(length) if length else b""
    return status, body


def _put(thing_id: str, body: bytes) -> bytes:
    return (
        f"PUT /things/{thing_id} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/td+json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _subscribe(port: int, arrivals: dict[int, list[float]], ready: asyncio.Event, expected: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    await reader.readuntil(b"\r\n\r\n")  # the response head: subscribed (nothing precedes the first event)
    ready.set()
    seen = 0
    while seen < expected:
        line = await reader.readline()
        if line.startswith(b"id: "):
            arrivals.setdefault(int(line[4:].split(b"/")[0]), []).append(time.perf_counter())  # seq[/high/pending]
            seen += 1
    writer.close()


async def fan_out(port: int, subscribers: int, writes: int, gap: float) -> list[float]:
    arrivals: dict[int, list[float]] = {}
    readies = [asyncio.Event() for _ in range(subscribers)]
    tasks = []
    for ready in readies:
        tasks.append(asyncio.create_task(_subscribe(port, arrivals, ready, writes)))
        await asyncio.sleep(0)  # spread the connects a little
    await asyncio.wait_for(asyncio.gather(*(ready.wait() for ready in readies)), 60)
    await asyncio.sleep(0.5)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    acknowledged: dict[str, float] = {}
    for index in range(writes):
        body = _document(f"Fan-out {index}")
        thing_id = json.loads(body)["id"]
        status, _ = await _request(reader, writer, _put(thing_id, body))
        assert status == 201, status
        acknowledged[thing_id] = time.perf_counter()
        await asyncio.sleep(gap)
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    writer.close()
    # Events carry seq, writes are sequential: the i-th smallest seq belongs to the i-th write.
    delays = []
    for seq, ack in zip(sorted(arrivals), acknowledged.values(), strict=True):
        assert len(arrivals[seq]) == subscribers, f"event {seq}: {len(arrivals[seq])} of {subscribers} subscribers"
        delays.extend(max(0.0, arrival - ack) for arrival in arrivals[seq])
    return delays


async def renewals(port: int, things: int, connections: int, seconds: float) -> tuple[int, float]:
    ids = []
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for index in range(things):
        body = _document(f"Leased {index}")
        thing_id = json.loads(body)["id"]
        status, _ = await _request(reader, writer, _put(thing_id, body))
        assert status == 201, status
        ids.append(thing_id)
    writer.close()
    done = 0
    deadline = 0.0

    async def worker(offset: int) -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        requests = [f"POST /api/v1/things/{i}/lease HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode() for i in ids]
        position = offset
        while time.perf_counter() < deadline:
            status, _ = await _request(reader, writer, requests[position % len(requests)])
            assert status == 200, status
            done += 1
            position += 1
        writer.close()

    started = time.perf_counter()
    deadline = started + seconds
    await asyncio.gather(*(worker(offset) for offset in range(connections)))
    return done, time.perf_counter() - started


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux), to tell the server's cost from contention on a busy box."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--gap", type=float, default=0.2, help="seconds between writes")
    parser.add_argument("--lease-things", type=int, default=200)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--renew-seconds", type=float, default=10.0)
    add_logging_option(parser)
    args = parser.parse_args()
    print(use_logging_option(args))

    print(machine())
    with postgres_server() as admin_url, fresh_database(admin_url) as database_url:
        env = {
            "REGISTRY_SSE_QUEUE_SIZE": "1000",
            "REGISTRY_DB_POOL_SIZE": "20",
            # Every subscriber comes from this one address (the cap is per address and process).
            "REGISTRY_MAX_CONNECTIONS_PER_CLIENT": str(args.subscribers + args.connections + 16),
        }
        with ServerProcess(database_url, served(env)) as server:
            assert server.process is not None
            pid = server.process.pid
            delays = asyncio.run(fan_out(server.port, args.subscribers, args.writes, args.gap))
            print(
                f"fan-out: {args.subscribers} subscribers x {args.writes} writes = {len(delays)} deliveries; "
                f"ack->event p50 {statistics.median(delays) * 1000:.1f} ms, "
                f"p99 {percentile(delays, 0.99) * 1000:.1f} ms, max {max(delays) * 1000:.1f} ms (target p99 <= 250 ms)"
            )
            cpu_before = cpu_seconds(pid)
            done, elapsed = asyncio.run(renewals(server.port, args.lease_things, args.connections, args.renew_seconds))
            cpu = cpu_seconds(pid) - cpu_before  # includes registering --lease-things descriptions first
            print(
                f"lease renewals: {done} in {elapsed:.1f} s = {done / elapsed:.0f}/s "
                f"over {args.connections} connections (target >= 2000/s); server CPU {cpu:.1f} s = "
                f"{cpu / done * 1e6:.0f} us per renewal, i.e. {done / cpu:.0f}/s per fully available core"
            )
            print(f"load average after the run: {os.getloadavg()[0]:.2f} (other processes compete for the cores)")


if __name__ == "__main__":
    main()
