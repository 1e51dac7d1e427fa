"""Throughput and latency of the Things API: PUT registrations/s and GET /things/{id} requests/s.

    python bench/bench_things.py                  # starts one `registry serve` on a fresh database
    python bench/bench_things.py --url http://127.0.0.1:8080 --duration 20
    python bench/bench_things.py --get-floors --rounds 3   # GET by id against the bare floors
    python bench/bench_things.py --get-floors --log-cost --rounds 5   # GET by id, access log on and off
    python bench/bench_things.py --get-floors --log-cost --reference ../main   # and another clone's, interleaved

Every server under test runs the default configuration (the access log on, at information level, JSON lines to a
file) unless ``--quiet-log`` says otherwise (warnings only, no access log), and the output says which, beside the
interpreter (path, version, PGO/LTO as its build declares them, a fixed pure-Python loop timed as a CPU-speed
reference), the cores and the load average.

``--get-floors`` registers ``--descriptions`` WeatherAgents, then measures GET by id in interleaved rounds (their
order reversed every other round) on: the directory as configured by default, the same without its access log,
at warning level (its access log writes no line), without its response cache (REGISTRY_RESPONSE_CACHE_ENTRIES=0),
with two worker processes, a minimal Litestar handler returning the enriched bytes from a dict, and a minimal
Litestar + asyncpg handler reading the document by id (the bare floors, on the same uvicorn and uvloop); with
``--go-reference BINARY``, also the Go reference directory of issue 15 (bench/go_reference.py), freshly started
and given the same agents. Each figure is given as ratios to the cached-bytes floor (and the Go reference) round
by round, min-max and median. ``--log-cost`` measures only the directory as configured by default, without its
access log and at warning level, and the cached-bytes floor; it prints each pair's ratio of medians, and the CPU a
request of the server's child processes (the access log's log process) apart. ``--reference CLONE`` adds another
clone's directory, by default and without its access log, to the same rounds (on this clone's database: the
schemas must match).

32 concurrent connections by default, the seed WeatherAgent with distinct ids. The load comes from `wrk`
(apt-get install wrk) when it is installed, else from an httpx asyncio client (which itself needs a core, so
it under-reports). Client and server share this machine.
Targets (issue 2): GET >= 3,000 req/s, PUT >= 500/s, one server process on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
from litestar import Litestar, Response, get
from litestar.exceptions import NotFoundException

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.go_reference import GoReference  # noqa: E402
from bench.rounds import alternated, load_average, logging_said, machine, server_logging  # noqa: E402
from registry.descriptions.registration_info import enrich_json  # noqa: E402
from tests.support.servers import ServerProcess, free_port, fresh_database, postgres_server  # noqa: E402

WEATHER_AGENT = json.loads((REPO_ROOT / "tests" / "fixtures" / "weather-agent.td.json").read_text())
ID_PREFIX = "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-"
GO_LABEL = "Go reference (LinkSmart)"
#: A server under test: its base URL and its process (whose CPU time is charged to its requests).
Contender = tuple[str, psutil.Process]

PUT_SCRIPT = """
local counter = 0
local template = [==[%(template)s]==]
local headers = {["Content-Type"] = "application/td+json"}
local threads = 0
function setup(thread)
  thread:set("tid", string.format("%%02d", threads))
  threads = threads + 1
end
function request()
  counter = counter + 1
  local id = "%(prefix)s" .. tid .. string.format("%%010d", counter)
  return wrk.format("PUT", "/things/" .. id, headers, (template:gsub("__ID__", id)))
end
"""

GET_SCRIPT = """
local ids = {}
for line in io.lines("%(ids_file)s") do ids[#ids + 1] = line end
math.randomseed(os.time())
function request() return wrk.format("GET", "/things/" .. ids[math.random(#ids)]) end
"""


class Figures:
    def __init__(self, label: str, requests_per_second: float, p50_ms: float, p99_ms: float, errors: int) -> None:
        self.label, self.rps, self.p50, self.p99, self.errors = label, requests_per_second, p50_ms, p99_ms, errors
        #: Server CPU seconds per request, when the server process is ours to watch (with its child processes).
        self.cpu_per_request: float | None = None
        #: Of which its child processes' (the access log's log process, --workers' processes).
        self.children_cpu_per_request: float | None = None

    def __str__(self) -> str:
        line = (
            f"{self.label:<18} {self.rps:>7,.0f} req/s   p50 {self.p50:7.2f} ms   p99 {self.p99:7.2f} ms"
            f"   errors {self.errors}"
        )
        if self.cpu_per_request:
            line += (
                f"   server CPU {self.cpu_per_request * 1000:.3f} ms/request"
                f" (= {1 / self.cpu_per_request:,.0f} req/s per fully available core)"
            )
        if self.children_cpu_per_request:
            line += f", {self.children_cpu_per_request * 1_000_000:.1f} µs in child processes"
        return line


def cpu_seconds(process: psutil.Process | None) -> float:
    if process is None:
        return 0.0
    times = process.cpu_times()
    return float(times.user + times.system)


def _milliseconds(value: str) -> float:
    number, unit = re.match(r"([\d.]+)(\w+)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[unit]


def run_wrk(label: str, url: str, script: str, connections: int, duration: float, threads: int) -> Figures:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
        lua.write(script)
    try:
        output = subprocess.run(
            ["wrk", f"-t{threads}", f"-c{connections}", f"-d{round(duration)}s", "--latency", "-s", lua.name, url],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    finally:
        os.unlink(lua.name)
    try:
        rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
        p50 = _milliseconds(re.search(r"^\s+50%\s+(\S+)", output, re.MULTILINE).group(1))  # type: ignore[union-attr]
        p99 = _milliseconds(re.search(r"^\s+99%\s+(\S+)", output, re.MULTILINE).group(1))  # type: ignore[union-attr]
    except (AttributeError, ValueError) as error:
        raise RuntimeError(f"could not read wrk's output:\n{output}") from error
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    errors = (int(non_2xx.group(1)) if non_2xx else 0) + (sum(map(int, socket_errors.groups())) if socket_errors else 0)
    return Figures(label, rps, p50, p99, errors)


def run_httpx(label: str, url: str, method: str, ids: list[str], connections: int, duration: float) -> Figures:
    latencies: list[float] = []
    errors = 0
    body_template = json.dumps(WEATHER_AGENT).replace(WEATHER_AGENT["id"], "__ID__")

    async def client_loop(number: int, client: httpx.AsyncClient, deadline: float) -> None:
        nonlocal errors
        counter = 0
        while time.perf_counter() < deadline:
            counter += 1
            if method == "PUT":
                thing_id = f"{ID_PREFIX}{number:02d}{counter:010d}"
                content = body_template.replace("__ID__", thing_id)
                start = time.perf_counter()
                response = await client.put(
                    f"/things/{thing_id}", content=content, headers={"content-type": "application/td+json"}
                )
            else:
                start = time.perf_counter()
                response = await client.get(f"/things/{ids[(number * 7919 + counter) % len(ids)]}")
            latencies.append(time.perf_counter() - start)
            errors += response.status_code >= 300

    async def run() -> float:
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
            started = time.perf_counter()
            deadline = started + duration
            await asyncio.gather(*(client_loop(number, client, deadline) for number in range(connections)))
            return time.perf_counter() - started

    elapsed = asyncio.run(run())
    quantiles = statistics.quantiles(latencies, n=100)
    return Figures(label, len(latencies) / elapsed, quantiles[49] * 1000, quantiles[98] * 1000, errors)


def registered_ids(url: str) -> list[str]:
    with httpx.Client(base_url=url, timeout=120) as client:
        return [td["id"] for td in client.get("/things").json() if td["id"].startswith(ID_PREFIX)]


@contextlib.contextmanager
def target(url: str | None, quiet_log: bool = False) -> Iterator[tuple[str, psutil.Process | None]]:
    """The directory's base URL and, when this script started it, its process (to measure its CPU time)."""
    if url:
        yield url.rstrip("/"), None
        return
    with postgres_server() as admin_url, fresh_database(admin_url) as database_url:
        # The default connection budget of a server process, whatever the test helper sets for tests.
        env = {"REGISTRY_DB_POOL_SIZE": "10", **server_logging(quiet_log)}
        server = ServerProcess(database_url, env).start()
        try:
            assert server.process is not None
            yield server.base_url, psutil.Process(server.process.pid)
        finally:
            server.stop()


def measured(process: psutil.Process | None, phase: Callable[[], Figures]) -> Figures:
    before = cpu_seconds(process)
    started = time.perf_counter()
    figures = phase()
    if process is not None:
        requests = figures.rps * (time.perf_counter() - started)
        figures.cpu_per_request = (cpu_seconds(process) - before) / max(requests, 1)
    return figures


# -- GET by id against the bare floors (--get-floors)

FLOOR_QUERY = "SELECT document_text FROM descriptions WHERE id = $1"
FLOOR_ROWS = "SELECT id, document_text, created, modified, expires, ttl FROM descriptions"


def floor_app(kind: str, database_url: str) -> Litestar:
    """A minimal Litestar application serving GET /things/{id}: ``bytes`` answers from a dict of the enriched JSON
    made at start-up, ``asyncpg`` reads the stored JSON by id per request and sends it as it is."""
    state: dict[str, Any] = {}

    async def start() -> None:
        url = database_url.replace("postgresql+asyncpg://", "postgresql://")
        state["pool"] = pool = await asyncpg.create_pool(url, min_size=10, max_size=10)
        if kind == "bytes":
            rows = await pool.fetch(FLOOR_ROWS)
            state["served"] = {row[0]: _enriched(row[1:]) for row in rows}

    @get("/things/{thing_id:str}", media_type="application/td+json")
    async def retrieve(thing_id: str) -> Response[bytes]:
        if kind == "bytes":
            served = state["served"].get(thing_id)
        else:
            text = await state["pool"].fetchval(FLOOR_QUERY, thing_id)
            served = None if text is None else text.encode()
        if served is None:
            raise NotFoundException()
        return Response(served, media_type="application/td+json")

    return Litestar([retrieve], on_startup=[start], logging_config=None)


def _enriched(row: Any) -> bytes:
    document_text, created, modified, expires, ttl = row
    return enrich_json(
        document_text, created=created, modified=modified, expires=expires, ttl=ttl, retrieved=dt.datetime.now(dt.UTC)
    )


def serve_floor(kind: str, port: int, database_url: str) -> None:
    import uvicorn

    uvicorn.run(
        floor_app(kind, database_url), host="127.0.0.1", port=port, log_level="warning", access_log=False, loop="uvloop"
    )


@contextlib.contextmanager
def floor_process(kind: str, database_url: str) -> Iterator[tuple[str, psutil.Process]]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve-floor", kind, "--port", str(port), "--database-url", database_url],
        cwd=REPO_ROOT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/things/none", timeout=2).status_code == 404:
                    break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"the {kind} floor did not start")
            time.sleep(0.2)
        yield url, psutil.Process(process.pid)
    finally:
        process.terminate()
        process.wait(10)


def register(url: str, count: int) -> list[str]:
    """``count`` WeatherAgents with distinct ids, 16 at a time."""
    ids = [f"{ID_PREFIX}{number:012d}" for number in range(count)]

    async def run() -> None:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            gate = asyncio.Semaphore(16)

            async def put(thing_id: str) -> None:
                async with gate:
                    response = await client.put(
                        f"/things/{thing_id}",
                        json={**WEATHER_AGENT, "id": thing_id},
                        headers={"content-type": "application/td+json"},
                    )
                    response.raise_for_status()

            await asyncio.gather(*(put(thing_id) for thing_id in ids))

    asyncio.run(run())
    return ids


def tree_cpu_seconds(process: psutil.Process) -> float:
    """CPU time of a server and its worker processes (uvicorn's --workers are children of the supervisor)."""
    total = cpu_seconds(process)
    for child in process.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += cpu_seconds(child)
    return total


FLOOR_LABEL = "floor: cached bytes"
DEFAULTS_LABEL = "registry, defaults"
LOG_OFF_LABEL = "registry, access log off"
WARNING_LABEL = "registry, level warning"
REFERENCE_LABEL = "reference, defaults"
REFERENCE_OFF_LABEL = "reference, access log off"


def start_contenders(args: argparse.Namespace, stack: contextlib.ExitStack) -> tuple[dict[str, Contender], list[str]]:
    """The servers of --get-floors, started on one fresh database given ``--descriptions`` WeatherAgents: the
    directory as configured by default (or --quiet-log), its variants, the bare floors and the Go reference."""
    admin_url = stack.enter_context(postgres_server())
    database_url = stack.enter_context(fresh_database(admin_url))
    servers: dict[str, Contender] = {}

    def registry(label: str, env: dict[str, str], checkout: Path | None = None) -> None:
        base = {"REGISTRY_DB_POOL_SIZE": "10", **server_logging(args.quiet_log)}
        server = ServerProcess(database_url, {**base, **env}, checkout=checkout)
        server.start(timeout=120)
        stack.callback(server.stop)
        assert server.process is not None
        servers[label] = (server.base_url, psutil.Process(server.process.pid))

    registry(DEFAULTS_LABEL, {})
    ids = register(servers[DEFAULTS_LABEL][0], args.descriptions)
    if not args.quiet_log:  # what the access log costs: the same server without it, and at warning level
        registry(LOG_OFF_LABEL, {"REGISTRY_ACCESS_LOG": "false"})
        registry(WARNING_LABEL, {"REGISTRY_LOG_LEVEL": "warning"})
    if args.reference is not None:  # another clone's directory (its own schema version must match), the same two ways
        registry(REFERENCE_LABEL, {}, args.reference)
        if not args.quiet_log:
            registry(REFERENCE_OFF_LABEL, {"REGISTRY_ACCESS_LOG": "false"}, args.reference)
    if not args.log_cost:
        registry("registry, no cache", {"REGISTRY_RESPONSE_CACHE_ENTRIES": "0"})
        registry("registry, 2 workers", {"REGISTRY_WORKERS": "2"})
    servers[FLOOR_LABEL] = stack.enter_context(floor_process("bytes", database_url))
    if not args.log_cost:
        servers["floor: asyncpg"] = stack.enter_context(floor_process("asyncpg", database_url))
    if args.go_reference:
        go = GoReference(args.go_reference)
        stack.callback(go.close)
        go.restart()
        assert go.process is not None
        register(go.url, args.descriptions)
        servers[GO_LABEL] = (go.url, go.process)
        print(f"Go reference: {go.binary} {go.version()}")
    return servers, ids


def get_floors(args: argparse.Namespace) -> None:
    with contextlib.ExitStack() as stack:
        servers, ids = start_contenders(args, stack)
        ids_file = stack.enter_context(tempfile.NamedTemporaryFile("w", suffix=".ids"))
        ids_file.write("\n".join(ids) + "\n")
        ids_file.flush()
        script = GET_SCRIPT % {"ids_file": ids_file.name}
        for url, _ in servers.values():  # warm: every id read once (fills the caches)
            run_wrk("warm-up", url, script, args.connections, 3, args.threads)

        print(machine())
        print(logging_said(args.quiet_log))
        print(f"{len(ids)} WeatherAgents, {args.connections} connections, {args.duration:g} s per run, wrk")
        results: dict[str, list[Figures]] = {label: [] for label in servers}
        for round_number in range(1, args.rounds + 1):
            print(f"-- round {round_number}, load average {load_average()}")
            for label in alternated(list(servers), round_number):
                url, process = servers[label]
                before, before_own = tree_cpu_seconds(process), cpu_seconds(process)
                started = time.perf_counter()
                figures = run_wrk(label, url, script, args.connections, args.duration, args.threads)
                requests = figures.rps * (time.perf_counter() - started)
                total, own = tree_cpu_seconds(process) - before, cpu_seconds(process) - before_own
                figures.cpu_per_request = total / max(requests, 1)
                figures.children_cpu_per_request = (total - own) / max(requests, 1)
                results[label].append(figures)
                print(figures)
        summarise(results, args)


def _per_round(runs: list[Figures], references: list[Figures]) -> str:
    ratios = [run.rps / reference.rps for run, reference in zip(runs, references, strict=True)]
    return f"{min(ratios):.2f}-{max(ratios):.2f}x (median {statistics.median(ratios):.2f})"


def summarise(results: dict[str, list[Figures]], args: argparse.Namespace) -> None:
    """Each contender's median and spread, and its ratios to the references round by round (they interleave)."""
    print(f"-- summary of {args.rounds} interleaved rounds (median, min-max), {logging_said(args.quiet_log)}")
    print(f"   {machine()}")
    for label, runs in results.items():
        rates = [f.rps for f in runs]
        versus = f"   {_per_round(runs, results[FLOOR_LABEL])} the cached-bytes floor"
        if GO_LABEL in results:
            versus += f", {_per_round(runs, results[GO_LABEL])} the Go reference"
        print(
            f"{label:<28} {statistics.median(rates):>7,.0f} req/s ({min(rates):,.0f}-{max(rates):,.0f})"
            f"   p50 {statistics.median(f.p50 for f in runs):.2f} ms"
            f"   server CPU {statistics.median(f.cpu_per_request or 0 for f in runs) * 1000:.3f} ms/request{versus}"
        )
    for mine, label in (
        (DEFAULTS_LABEL, LOG_OFF_LABEL),
        (DEFAULTS_LABEL, WARNING_LABEL),
        (REFERENCE_LABEL, REFERENCE_OFF_LABEL),
        (DEFAULTS_LABEL, REFERENCE_LABEL),
    ):
        if mine in results and label in results:
            runs, references = results[mine], results[label]
            cpu = [run.cpu_per_request or 0 for run in runs]
            reference_cpu = [reference.cpu_per_request or 0 for reference in references]
            extra = [(mine - theirs) * 1_000_000 for mine, theirs in zip(cpu, reference_cpu, strict=True)]
            of_medians = statistics.median(run.rps for run in runs) / statistics.median(r.rps for r in references)
            print(
                f"{mine} vs {label}, GET by id per round: {_per_round(runs, references)}"
                f" the throughput, {of_medians:.3f}x as a ratio of medians ({1 - of_medians:+.1%} lower);"
                f" server CPU {min(extra):+.1f} to {max(extra):+.1f} µs/request"
                f" (median {statistics.median(extra):+.1f})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="benchmark a running directory instead of starting one")
    parser.add_argument("--connections", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--duration", type=float, default=10, help="seconds per phase (default 10)")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    parser.add_argument("--tool", choices=["wrk", "httpx"], default="wrk" if shutil.which("wrk") else "httpx")
    parser.add_argument("--get-floors", action="store_true", help="GET by id: cache on/off against the bare floors")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of --get-floors (default 3)")
    parser.add_argument("--descriptions", type=int, default=1000, help="descriptions for --get-floors")
    parser.add_argument("--go-reference", metavar="BINARY", help="--get-floors: also a LinkSmart thing-directory")
    parser.add_argument(
        "--reference",
        type=Path,
        metavar="CLONE",
        help="--get-floors: also another clone's directory, as configured by default and (unless --quiet-log) "
        "without its access log, interleaved with this one's (it runs on this clone's database and schema)",
    )
    parser.add_argument(
        "--log-cost",
        action="store_true",
        help="--get-floors: only the directory as configured by default, without its access log, at warning level, "
        "and the cached-bytes floor",
    )
    parser.add_argument(
        "--quiet-log",
        action="store_true",
        help="run the directory at warning level without its access log (not the default configuration)",
    )
    parser.add_argument("--serve-floor", choices=["bytes", "asyncpg"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--database-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_floor:
        serve_floor(args.serve_floor, args.port, args.database_url)
        return
    if args.get_floors:
        get_floors(args)
        return

    with target(args.url, args.quiet_log) as (url, process):
        if args.tool == "wrk":
            template = json.dumps(WEATHER_AGENT).replace(WEATHER_AGENT["id"], "__ID__")
            put_script = PUT_SCRIPT % {"template": template, "prefix": ID_PREFIX}
            put = measured(
                process,
                lambda: run_wrk("PUT /things/{id}", url, put_script, args.connections, args.duration, args.threads),
            )
            ids = registered_ids(url)
            with tempfile.NamedTemporaryFile("w", suffix=".ids", delete=False) as ids_file:
                ids_file.write("\n".join(ids) + "\n")
            try:
                get_script = GET_SCRIPT % {"ids_file": ids_file.name}
                get = measured(
                    process,
                    lambda: run_wrk("GET /things/{id}", url, get_script, args.connections, args.duration, args.threads),
                )
            finally:
                os.unlink(ids_file.name)
        else:
            put = measured(
                process, lambda: run_httpx("PUT /things/{id}", url, "PUT", [], args.connections, args.duration)
            )
            ids = registered_ids(url)
            get = measured(
                process, lambda: run_httpx("GET /things/{id}", url, "GET", ids, args.connections, args.duration)
            )

    print(f"load tool: {args.tool}, {args.connections} connections, {args.duration:g} s per phase")
    print(f"{machine()} (client and server share the cores)")
    print(logging_said(args.quiet_log) if not args.url else "logging: as the server at --url is configured")
    print(f"distinct WeatherAgent ids registered: {len(ids)}")
    print(put)
    print(get)


if __name__ == "__main__":
    main()
