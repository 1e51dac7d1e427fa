"""The benchmark suite: every figure of docs/performance.md (and of the README) from one command.

    python bench/suite.py                       # 10³ and 10⁴ descriptions, 3 rounds of 5 s per phase
    python bench/suite.py --large               # and 10⁵
    python bench/suite.py --sizes 1000 --rounds 3 --duration 5 --no-write
    python bench/suite.py --large --fail-on-regression    # exit 1 when a figure fell below the recorded run's
    python bench/suite.py --compare-only BEFORE.json NOW.json

Per size, on a fresh database of its own: start ``registry serve`` on the empty database (start-up), write the
generated catalogue (bench/catalogue.py: LMOS agents and tools of 12 vendors, 80 capabilities, three versions) as
files and load it with ``registry import`` (the bulk import rate), wait until the SPARQL index holds it all (it
catches up behind the import), restart the server (start-up at that size: API answers, SPARQL ready; its response
cache sized to hold the catalogue, as the cached-bytes floor holds it), start the two
bare floors (bench/bench_things.py) on the same database, then run every phase in ``--rounds`` interleaved rounds
(floors, then the directory, round after round, so that a change in the machine's load hits all alike) and report
throughput, p50/p99, CPU per request of the server process, of its SPARQL worker and of its PostgreSQL backends,
and the RSS of every process. Client, servers and PostgreSQL share this machine: the cores, the load average and
the interpreter (path, version, PGO/LTO as its build declares them, a fixed pure-Python loop timed as a CPU-speed
reference) are printed with the figures, and every figure is a min-max over the rounds. The directory runs its
default configuration (the access log on, at information level, JSON lines to a file), as a user runs it, unless
``--quiet-log`` says otherwise (warnings only, no access log; the output says so).
Each figure is compared with the target of issue 15 (pass/miss). With ``--go-reference BINARY`` (a LinkSmart
thing-directory you built, bench/go_reference.py), PUT new and PUT replace are also measured on the Go reference
directory in every round, freshly started each round with 1,000 descriptions of the catalogue, and the PUT targets
are ratios to it; without it they are compared with the figure issue 15 quotes for it.

Each size's raw figures (per round) go to bench/results/suite.json, replacing that size's entry after the run has
compared with it (bench/regress.py: a figure regressed when its range is wholly worse than the recorded one); the
comparison is printed and ends the size's section of the document.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import itertools
import json
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import asyncpg
import httpx
import psutil

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench import regress  # noqa: E402
from bench.bench_things import floor_process  # noqa: E402
from bench.catalogue import (  # noqa: E402
    CAPABILITIES,
    COMMON_WORD,
    VENDORS,
    capability_id,
    description,
    rare_word,
    thing_id,
)
from bench.go_reference import GoReference  # noqa: E402
from bench.load import Outcome, Request, drive  # noqa: E402
from bench.regress import Entry, PhaseRecord  # noqa: E402
from bench.rounds import load_average, logging_said, machine, machine_facts, rss_mb, server_logging  # noqa: E402
from tests.support.servers import ServerProcess, fresh_database, postgres_server, sparql_answer  # noqa: E402

DOCUMENT = "docs/performance.md"
#: The raw figures of the last run, one entry per size: what the next run compares with (bench/regress.py).
RESULTS = "bench/results/suite.json"
BEGIN, END = "<!-- bench/suite.py: begin -->", "<!-- bench/suite.py: end -->"
TD_JSON = "application/td+json"
#: Quoted, not measured here: LinkSmart thing-directory (Go, built from source, validation off), freshly started,
#: on this machine (issue 15). PUT new 190/s was 0.38x of it.
GO_REFERENCE_PUT = 500.0
IMPORT_CONCURRENCY = 16
#: Descriptions the Go reference holds when its rounds start (PUT replace puts them back).
GO_REFERENCE_LOADED = 1000
GO_PUT_NEW, GO_PUT_REPLACE = "Go reference: PUT new", "Go reference: PUT replace"


# -- processes


def cpu_snapshot(processes: list[psutil.Process]) -> dict[int, float]:
    """CPU seconds (user + system) of each process still running, by pid."""
    seconds: dict[int, float] = {}
    for process in processes:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            seconds[process.pid] = times.user + times.system
    return seconds


def cpu_spent(processes: list[psutil.Process], before: dict[int, float]) -> float:
    """CPU seconds spent since ``before`` by the processes still running: a PostgreSQL backend that exits during a
    phase takes its share with it (subtracting its past from a total without it made the figure negative)."""
    now = cpu_snapshot(processes)
    return sum(now[pid] - before[pid] for pid in now.keys() & before.keys())


@dataclass
class Watched:
    """The processes of one server under test, by role: their CPU is charged to its requests."""

    server: psutil.Process
    database_url: str

    def worker(self) -> list[psutil.Process]:
        with contextlib.suppress(psutil.Error):
            return self.server.children(recursive=True)
        return []

    def backends(self) -> list[psutil.Process]:
        """PostgreSQL backends serving this server's database (pg_stat_activity), when they are on this machine."""

        async def pids() -> list[int]:
            connection = await asyncpg.connect(self.database_url)
            try:
                rows = await connection.fetch(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                return [row["pid"] for row in rows]
            finally:
                await connection.close()

        found = []
        for pid in asyncio.run(pids()):
            with contextlib.suppress(psutil.Error):
                found.append(psutil.Process(pid))
        return found

    def roles(self) -> dict[str, list[psutil.Process]]:
        return {"server": [self.server], "SPARQL worker": self.worker(), "PostgreSQL backends": self.backends()}


@contextlib.contextmanager
def floor(kind: str, database_url: str) -> Iterator[tuple[int, psutil.Process]]:
    """A bare floor of bench/bench_things.py (``bytes``: the enriched JSON from a dict; ``asyncpg``: the document
    read by id per request), on uvicorn and uvloop as ``registry serve``: its port and process."""
    with floor_process(kind, database_url) as (url, process):
        yield int(url.rsplit(":", 1)[1]), process


# -- phases


@dataclass
class Target:
    """A figure of issue 15: ``check(phase figures)`` is (value shown, pass?)."""

    text: str
    check: Callable[[Phase, dict[str, Phase]], tuple[str, bool]]
    #: The phase measured in the same rounds that this one's rates are divided by, if the target is a ratio.
    reference: str | None = None
    #: Whether the target is a latency (judged by p50).
    latency: bool = False


@dataclass
class Phase:
    name: str
    connections: int
    next_request: Callable[[int, int], Request]
    port: int
    roles: Callable[[], dict[str, list[psutil.Process]]]
    target: Target | None = None
    #: Waits, after a phase of writes, until the SPARQL index has applied them: the worker's CPU for them is
    #: charged to this phase, not to the phases after it (whose figures it would otherwise lower).
    settle: Callable[[], None] | None = None
    #: Runs, untimed, before the warm-up and before each run (the GET phase reads every description once: the
    #: writes of the round before evicted many from the response cache, and the floor's dict holds them all).
    prepare: Callable[[], None] | None = None
    #: Runs, untimed, after the run's figures are taken (and after the warm-up).
    after: Callable[[], None] | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    cpu: list[dict[str, float]] = field(default_factory=list)

    def run(self, duration: float) -> None:
        if self.prepare is not None:
            self.prepare()
        roles = self.roles()
        before = {role: cpu_snapshot(processes) for role, processes in roles.items()}
        outcome = asyncio.run(drive("127.0.0.1", self.port, self.next_request, self.connections, duration))
        if self.settle is not None:
            self.settle()
        self.outcomes.append(outcome)
        self.cpu.append(
            {
                role: cpu_spent(processes, before[role]) / max(outcome.requests, 1) * 1000
                for role, processes in roles.items()
            }
        )
        if self.after is not None:
            self.after()

    def warm(self) -> None:
        """An untimed second: connections opened, statements prepared, caches filled as in steady use."""
        if self.prepare is not None:
            self.prepare()
        asyncio.run(drive("127.0.0.1", self.port, self.next_request, self.connections, 1.0))
        if self.settle is not None:
            self.settle()
        if self.after is not None:
            self.after()

    def rates(self) -> list[float]:
        return [outcome.rate for outcome in self.outcomes]

    def p50s(self) -> list[float]:
        return [outcome.quantile_ms(0.5) for outcome in self.outcomes]

    def p99s(self) -> list[float]:
        return [outcome.quantile_ms(0.99) for outcome in self.outcomes]

    def failures(self) -> dict[int, int]:
        failed: dict[int, int] = {}
        for outcome in self.outcomes:
            for status, number in outcome.statuses.items():
                if status >= 300:
                    failed[status] = failed.get(status, 0) + number
        return failed


def spread(values: list[float], digits: int = 0) -> str:
    if not values:
        return "-"
    low, high = min(values), max(values)
    formatted = [f"{value:,.{digits}f}" for value in (low, high)]
    return formatted[0] if formatted[0] == formatted[1] else f"{formatted[0]}-{formatted[1]}"


def p50_at_most(limit_ms: float) -> Target:
    def check(phase: Phase, _: dict[str, Phase]) -> tuple[str, bool]:
        median = statistics.median(phase.p50s())
        return f"p50 {median:.1f} ms", median <= limit_ms

    return Target(f"p50 ≤ {limit_ms:g} ms at 10⁵", check, latency=True)


def round_ratios(phase: Phase, reference: Phase) -> list[float]:
    """The phase's rate divided by the reference's, round by round."""
    return [ours / theirs for ours, theirs in zip(phase.rates(), reference.rates(), strict=True)]


def rate_ratio(reference: str, at_least: float) -> Target:
    def check(phase: Phase, phases: dict[str, Phase]) -> tuple[str, bool]:
        ratios = round_ratios(phase, phases[reference])
        return f"{spread(ratios, 2)}x", statistics.median(ratios) >= at_least

    return Target(f"≥ {at_least:g}x {reference}", check, reference=reference)


def rate_at_least(rate: float, text: str) -> Target:
    def check(phase: Phase, _: dict[str, Phase]) -> tuple[str, bool]:
        median = statistics.median(phase.rates())
        return f"{median / rate:.2f}x", median >= rate

    return Target(text, check)


def none_refused() -> Target:
    def check(phase: Phase, _: dict[str, Phase]) -> tuple[str, bool]:
        refused = sum(number for status, number in phase.failures().items() if status in (429, 503))
        return f"{refused} refused", refused == 0

    return Target("0 refused at 32 clients", check)


@dataclass
class Catalogue:
    """Which ids of the generated catalogue to ask for, and fresh ids for new registrations."""

    size: int
    rng: random.Random = field(default_factory=lambda: random.Random(1))

    def __post_init__(self) -> None:
        self.fresh = itertools.count(10**7)
        self.revisions = itertools.count(1)
        self.agents = [index for index in range(self.size) if not thing_id(index).startswith("urn:bench:tool")]

    def any_index(self) -> int:
        return self.rng.randrange(self.size)


def read_each_once(port: int, size: int) -> None:
    """GET every description once, 32 at a time: the response cache then holds what the cached-bytes floor read
    at its start (PUT replace and lease renewals evict what they change)."""

    async def read(client: httpx.AsyncClient, index: int) -> httpx.Response:
        return await client.get("/things/" + quote(thing_id(index), safe=":"))

    each_concurrently(f"http://127.0.0.1:{port}", range(size), read, 32)


def each_concurrently(
    base_url: str,
    indexes: Iterable[int],
    request: Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]],
    clients: int,
) -> None:
    """``request`` (idempotent) for every index, ``clients`` at a time on one connection pool; any error status
    raises.

    The pool keeps a connection per client (httpx keeps 20 alive by default, and opened the others per request).
    A request whose connection was closed before its answer is sent again, twice at most, and said: two runs of
    this suite ended so while warming the cache at 10⁵ (``httpx.ReadError``; the cause is not established,
    HTTP/1.1's keep-alive race, a connection closed as its next request arrives, is one candidate)."""
    retried = 0

    async def run() -> None:
        remaining = iter(indexes)
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:

            async def worker() -> None:
                nonlocal retried
                for index in remaining:
                    for attempt in range(3):
                        try:
                            response = await request(client, index)
                            break
                        except (httpx.ReadError, httpx.RemoteProtocolError):
                            if attempt == 2:
                                raise
                            retried += 1
                    response.raise_for_status()

            await asyncio.gather(*(worker() for _ in range(clients)))

    asyncio.run(run())
    if retried:
        print(f"  {retried} request(s) sent again: the server closed their connection unanswered", flush=True)


def fresh_go_reference(go: GoReference, size: int) -> None:
    """Restart the Go reference on an empty store and give it the first descriptions of the catalogue."""
    go.restart()

    async def write(client: httpx.AsyncClient, index: int) -> httpx.Response:
        method, path, body, content_type = put_back(index, 0)
        return await client.request(method, path, content=body, headers={"Content-Type": content_type})

    each_concurrently(go.url, range(min(size, GO_REFERENCE_LOADED)), write, 16)


def _json(method: str, path: str, body: object, content_type: str = "application/json") -> Request:
    return method, path, json.dumps(body).encode(), content_type


def put_back(index: int, revision: int) -> Request:
    """PUT of the catalogue's description ``index`` at ``revision`` (0: as first generated)."""
    document = description(index, revision=revision)
    return _json("PUT", "/things/" + quote(document["id"], safe=":"), document, TD_JSON)


def _get(path: str, **query: str | int) -> Request:
    return "GET", path + ("?" + urlencode(query) if query else ""), b"", ""


def _capability_query(name: str) -> str:
    return f'SELECT ?thing WHERE {{ ?thing lmos:capabilities/lmos:name "{name}" }} LIMIT 50'


def phases(
    catalogue: Catalogue,
    port: int,
    cached: tuple[int, psutil.Process],
    pooled: tuple[int, psutil.Process],
    watched: Watched,
    go: GoReference | None = None,
) -> list[Phase]:
    rng = catalogue.rng

    def get_by_id(_: int, __: int) -> Request:
        return _get("/things/" + quote(thing_id(catalogue.any_index()), safe=":"))

    def put_new(_: int, __: int) -> Request:
        document = description(next(catalogue.fresh))
        return _json("PUT", "/things/" + quote(document["id"], safe=":"), document, TD_JSON)

    def put_replace(_: int, __: int) -> Request:
        return put_back(catalogue.any_index(), next(catalogue.revisions))

    def go_put_replace(_: int, __: int) -> Request:
        return put_back(rng.randrange(min(catalogue.size, GO_REFERENCE_LOADED)), next(catalogue.revisions))

    def lease(_: int, __: int) -> Request:
        return "POST", f"/api/v1/things/{quote(thing_id(rng.choice(catalogue.agents)), safe=':')}/lease", b"", ""

    def filtered(_: int, __: int) -> Request:
        name = rng.choice(CAPABILITIES)
        vendor = rng.choice(VENDORS).split()[0]
        return _get("/api/v1/search", kind="agent", vendor=vendor, capability=capability_id(name), limit=20)

    def resolve(_: int, __: int) -> Request:
        requirement = {
            "capability": capability_id(rng.choice(CAPABILITIES)),
            "range": rng.choice(["^1", "^2", ">=1 <3"]),
        }
        return _json("POST", "/api/v1/resolve", {"requirements": [requirement]})

    def sparql(_: int, __: int) -> Request:
        return _get("/search/sparql", query=_capability_query(rng.choice(CAPABILITIES)))

    def settle() -> None:
        index_settled(f"http://127.0.0.1:{port}")
        worker_idle(watched.worker())

    cached_roles: Callable[[], dict[str, list[psutil.Process]]] = lambda: {"server": [cached[1]]}  # noqa: E731
    pooled_roles: Callable[[], dict[str, list[psutil.Process]]] = lambda: {  # noqa: E731
        "server": [pooled[1]],
        "PostgreSQL backends": Watched(pooled[1], watched.database_url).backends(),
    }
    references = [
        Phase("floor: Litestar, cached bytes", 32, get_by_id, cached[0], cached_roles),
        Phase("floor: Litestar + asyncpg", 32, get_by_id, pooled[0], pooled_roles),
    ]
    put_target = rate_at_least(GO_REFERENCE_PUT, "≥ 1.0x Go reference (500/s, quoted)")
    replace_target = put_target
    if go is not None:
        go_roles: Callable[[], dict[str, list[psutil.Process]]] = lambda: {  # noqa: E731
            "server": [go.process] if go.process else []
        }
        references += [
            Phase(
                GO_PUT_NEW,
                32,
                put_new,
                go.port,
                go_roles,
                prepare=lambda: fresh_go_reference(go, catalogue.size),
            ),
            # Stopped after its last phase of the round: leveldb compacting in the background would take CPU from
            # the phases after it.
            Phase(GO_PUT_REPLACE, 32, go_put_replace, go.port, go_roles, after=go.stop),
        ]
        put_target, replace_target = rate_ratio(GO_PUT_NEW, 1.0), rate_ratio(GO_PUT_REPLACE, 1.0)
    return [
        *references,
        Phase(
            "GET /things/{id}",
            32,
            get_by_id,
            port,
            watched.roles,
            rate_ratio("floor: Litestar, cached bytes", 0.8),
            prepare=lambda: read_each_once(port, catalogue.size),
        ),
        Phase("PUT new", 32, put_new, port, watched.roles, put_target, settle=settle),
        Phase("PUT replace", 32, put_replace, port, watched.roles, replace_target, settle=settle),
        Phase("lease renewal", 32, lease, port, watched.roles, rate_ratio("floor: Litestar + asyncpg", 0.8)),
        Phase(
            "listing page (limit 100)",
            1,
            lambda _, __: _get("/things", limit=100),
            port,
            watched.roles,
            p50_at_most(10),
        ),
        Phase("filtered search", 1, filtered, port, watched.roles, p50_at_most(15)),
        Phase(
            "free text, rare word",
            1,
            lambda _, __: _get("/api/v1/search", q=rare_word(catalogue.any_index()), limit=20),
            port,
            watched.roles,
            p50_at_most(15),
        ),
        Phase(
            f"free text, '{COMMON_WORD}' (every description)",
            1,
            lambda _, __: _get("/api/v1/search", q=COMMON_WORD, limit=20),
            port,
            watched.roles,
            p50_at_most(15),
        ),
        Phase("capability resolution", 1, resolve, port, watched.roles, p50_at_most(15)),
        Phase("SPARQL capability, LIMIT 50", 1, sparql, port, watched.roles, p50_at_most(20)),
        Phase("SPARQL capability, LIMIT 50", 32, sparql, port, watched.roles, none_refused()),
    ]


# -- one size


@dataclass
class SizeReport:
    size: int
    lines: list[str] = field(default_factory=list)
    verdicts: list[tuple[str, str, str, bool]] = field(default_factory=list)
    #: The raw figures, for the results file (bench/regress.py).
    record: Entry = field(default_factory=dict)

    def say(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)


def wait_ready(base_url: str, started: float, timeout: float) -> float:
    """Seconds from ``started`` until /readyz answers 200 (the SPARQL index caught up with the change log)."""
    with httpx.Client(base_url=base_url, timeout=30) as http:
        while http.get("/readyz").status_code != 200:
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"not ready after {timeout:g} s")
            time.sleep(0.1)
    return time.monotonic() - started


def start_timed(server: ServerProcess, timeout: float) -> tuple[float, float]:
    """Seconds until the Things API answers, and until SPARQL is ready."""
    started = time.monotonic()
    server.start(timeout=timeout)
    api = time.monotonic() - started
    return api, wait_ready(server.base_url, started, timeout)


def index_settled(base_url: str, timeout: float = 600) -> None:
    """Return once the SPARQL index has applied every write acknowledged so far."""
    sparql_answer(base_url, "ASK {}", timeout)


def worker_idle(processes: list[psutil.Process], timeout: float = 300, window: float = 0.5) -> None:
    """Return once the SPARQL worker has used under a tenth of a core for ``window`` seconds: RocksDB compacts
    what a phase of writes left behind (deletions above all) after the index has applied them, and that CPU is
    the writes' cost, not the next phase's."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = cpu_snapshot(processes)
        time.sleep(window)
        if cpu_spent(processes, before) < window / 10:
            return


def index_caught_up(base_url: str, size: int, started: float, timeout: float) -> float:
    """Seconds from ``started`` until the SPARQL index holds the whole import (checked: its last description)."""
    answer = sparql_answer(base_url, f"ASK {{ <{thing_id(size - 1)}> ?p ?o }}", timeout)
    if not answer.json()["boolean"]:
        raise RuntimeError(f"the SPARQL index answered without the last imported description: {answer.text}")
    return time.monotonic() - started


def bulk_import(size: int, base_url: str) -> tuple[float, str]:
    """Descriptions/s of ``registry import`` of the generated catalogue, and the command line."""
    with tempfile.TemporaryDirectory(prefix="bench-catalogue-") as directory:
        for index in range(size):
            Path(directory, f"{index:07d}.td.json").write_text(json.dumps(description(index)))
        command = [
            sys.executable,
            "-m",
            "registry",
            "import",
            directory,
            "--concurrency",
            str(IMPORT_CONCURRENCY),
            "--url",
            base_url,
        ]
        started = time.monotonic()
        finished = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
        elapsed = time.monotonic() - started
    if finished.returncode != 0:
        raise RuntimeError(f"registry import failed:\n{finished.stdout[-3000:]}\n{finished.stderr[-3000:]}")
    shown = f"registry import <{size:,} files> --concurrency {IMPORT_CONCURRENCY}"
    return size / elapsed, shown + f" → {finished.stdout.strip().splitlines()[0]}"


def cache_bytes(size: int) -> int:
    """A response cache for ``size`` generated descriptions (about 2 KB of served JSON each, 2.6 KB an entry)."""
    return max(64 * 1024 * 1024, size * 3 * 1024)


def run_size(
    size: int, admin_url: str, rounds: int, duration: float, timeout: float, go: GoReference | None, quiet_log: bool
) -> SizeReport:
    report = SizeReport(size)
    report.record = {
        "size": size,
        "rounds": rounds,
        "duration s": duration,
        "logging": logging_said(quiet_log),
        "machine": machine_facts(),
        "load average": {"start": load_average()},
    }
    report.say(f"\n### {size:,} descriptions\n")
    report.say(f"At the start: {machine()}; {logging_said(quiet_log)}.\n")
    report.say(
        f"The server's response cache holds {size:,} entries, {cache_bytes(size) // 2**20} MB at most "
        "(`REGISTRY_RESPONSE_CACHE_ENTRIES`, `_BYTES`): the catalogue, as the cached-bytes floor holds it.\n"
    )
    with fresh_database(admin_url) as database_url:
        server = ServerProcess(
            database_url,
            {
                "REGISTRY_DB_POOL_SIZE": "10",  # the default budget of a server process
                "REGISTRY_SPARQL_CLIENT_CONCURRENCY": "0",  # every client here comes from one address
                # The response cache holds the catalogue, as the cached-bytes floor does (its RSS counts it).
                "REGISTRY_RESPONSE_CACHE_ENTRIES": str(size),
                "REGISTRY_RESPONSE_CACHE_BYTES": str(cache_bytes(size)),
                **server_logging(quiet_log),
            },
        )
        try:
            empty_api, empty_sparql = start_timed(server, timeout)
            assert server.process is not None
            loading = Watched(psutil.Process(server.process.pid), database_url).roles()
            before = {role: cpu_snapshot(processes) for role, processes in loading.items()}
            rate, import_line = bulk_import(size, server.base_url)
            import_cpu = " / ".join(
                f"{cpu_spent(processes, before[role]) / size * 1000:.2f}" for role, processes in loading.items()
            )
            caught_up = index_caught_up(server.base_url, size, time.monotonic(), timeout)
            index_cpu = cpu_spent(loading["SPARQL worker"], before["SPARQL worker"]) / size * 1000
            server.stop()
            api, sparql = start_timed(server, timeout)
            assert server.process is not None
            watched = Watched(psutil.Process(server.process.pid), database_url)
            started_rss = {role: rss_mb(processes) for role, processes in watched.roles().items()}
            with (
                floor("bytes", database_url) as cached,
                floor("asyncpg", database_url) as pooled,
            ):
                catalogue = Catalogue(size)
                measured = phases(catalogue, server.port, cached, pooled, watched, go)
                for phase in measured:
                    phase.warm()
                for round_number in range(rounds):
                    for phase in measured:
                        phase.run(duration)
                    print(f"  round {round_number + 1}/{rounds} done, load average {load_average()}", flush=True)
                final_rss = {role: rss_mb(processes) for role, processes in watched.roles().items()}
                floor_rss = {"cached floor": rss_mb([cached[1]]), "asyncpg floor": rss_mb([pooled[1]])}
        finally:
            server.close()
    by_name = {phase.name: phase for phase in measured}
    report.say("| start | API answers (s) | SPARQL ready (s) |")
    report.say("|---|---:|---:|")
    report.say(f"| empty database, first start | {empty_api:.1f} | {empty_sparql:.1f} |")
    report.say(f"| {size:,} descriptions, restart (index on disk) | {api:.1f} | {sparql:.1f} |")
    report.verdicts += [
        ("start-up: API answers", "≤ 5 s at 10⁵", f"{api:.1f} s", api <= 5),
        ("start-up: SPARQL ready", "≤ 30 s at 10⁵", f"{sparql:.1f} s", sparql <= 30),
    ]
    report.say(
        f"\nBulk import: **{rate:,.0f} descriptions/s** (`{import_line}`); CPU ms per description: server, SPARQL "
        f"worker, PostgreSQL {import_cpu} (the worker indexes while the import runs, at low priority). The SPARQL "
        f"index had caught up {caught_up:.1f} s after the import ended ({index_cpu:.2f} ms of worker CPU per "
        "description in all); the restart above is with it caught up.\n"
    )
    report.verdicts.append(("bulk import", "≥ 1,000/s", f"{rate:,.0f}/s", rate >= 1000))
    report.say(
        "| phase | clients | req/s | p50 (ms) | p99 (ms) | CPU ms/request: server, worker, PostgreSQL | "
        "non-2xx | target | measured |"
    )
    report.say("|---|---:|---:|---:|---:|---|---|---|---|")
    for phase in measured:
        cpu = " / ".join(
            spread([figures.get(role, 0.0) for figures in phase.cpu], 2)
            for role in ("server", "SPARQL worker", "PostgreSQL backends")
        )
        failures = ", ".join(f"{number}x{status}" for status, number in sorted(phase.failures().items())) or "0"
        verdict = ""
        if phase.target:
            shown, passed = phase.target.check(phase, by_name)
            verdict = f"{phase.target.text} | {shown} **{'pass' if passed else 'MISS'}**"
            report.verdicts.append((f"{phase.name} ({phase.connections} clients)", phase.target.text, shown, passed))
        else:
            verdict = "(reference) | "
        report.say(
            f"| {phase.name} | {phase.connections} | {spread(phase.rates())} | {spread(phase.p50s(), 1)} | "
            f"{spread(phase.p99s(), 1)} | {cpu} | {failures} | {verdict} |"
        )
    one_replica = started_rss["server"] + started_rss["SPARQL worker"]
    after = final_rss["server"] + final_rss["SPARQL worker"]
    report.say(
        "\nRSS (MB) after the restart → after the rounds: server "
        f"{started_rss['server']:.0f} → {final_rss['server']:.0f}, SPARQL worker {started_rss['SPARQL worker']:.0f}"
        f" → {final_rss['SPARQL worker']:.0f}, PostgreSQL backends of its database "
        f"{started_rss['PostgreSQL backends']:.0f} → {final_rss['PostgreSQL backends']:.0f} (shared buffers they "
        f"touched included); floors: cached {floor_rss['cached floor']:.0f}, asyncpg {floor_rss['asyncpg floor']:.0f}."
    )
    report.verdicts.append(
        (
            "RSS of one replica (server + SPARQL worker)",
            "≤ 1 GB at 10⁵",
            f"{max(one_replica, after):.0f} MB",
            max(one_replica, after) <= 1024,
        )
    )
    report.record["load average"]["end"] = load_average()
    report.record |= {
        "start-up s": {
            "first start: API": round(empty_api, 2),
            "first start: SPARQL": round(empty_sparql, 2),
            "restart: API": round(api, 2),
            "restart: SPARQL": round(sparql, 2),
        },
        "import /s": round(rate, 1),
        "index caught up s": round(caught_up, 2),
        "RSS MB": {"one replica": round(max(one_replica, after)), "after the rounds": _rounded(final_rss)},
        "phases": [phase_record(phase, by_name) for phase in measured],
    }
    report.say(f"\nAt the end: {machine()}.")
    report.say("\n| figure | target | measured | verdict |")
    report.say("|---|---|---|---|")
    for name, target, shown, passed in report.verdicts:
        report.say(f"| {name} | {target} | {shown} | {'pass' if passed else '**MISS**'} |")
    return report


def _rounded(values: Iterable[float] | dict[str, float], digits: int = 2) -> Any:
    if isinstance(values, dict):
        return {key: round(value, digits) for key, value in values.items()}
    return [round(value, digits) for value in values]


def phase_record(phase: Phase, phases: dict[str, Phase]) -> PhaseRecord:
    """A phase's raw figures per round, and the measure it is judged by when compared with another run: the
    ratio against its target's reference, p50 for a latency target, req/s otherwise; a phase without a target
    is a reference."""
    record: PhaseRecord = {
        "name": phase.name,
        "clients": phase.connections,
        "req/s": _rounded(phase.rates(), 1),
        "p50 ms": _rounded(phase.p50s(), 3),
        "p99 ms": _rounded(phase.p99s(), 3),
        "judged by": "reference" if phase.target is None else "p50" if phase.target.latency else "rate",
    }
    reference = phase.target.reference if phase.target else None
    if reference is not None and reference in phases:
        record["ratio"] = {"against": reference, "values": _rounded(round_ratios(phase, phases[reference]), 4)}
        record["judged by"] = "ratio"
    return record


def compare_recorded(size_report: SizeReport, recorded: dict[str, Entry], tolerance: float) -> bool:
    """Add to the size's section the comparison with the recorded entry of its size; whether a figure regressed."""
    lines, regressed = regress.report(recorded.get(str(size_report.size)), size_report.record, tolerance)
    size_report.say("\n#### Against the run recorded before\n")
    for line in lines:
        size_report.say(line)
    return regressed


# -- the document


def write_document(
    reports: list[SizeReport], command: str, began: str, measured_on: str, go: GoReference | None, quiet_log: bool
) -> None:
    """Replace the suite's section of docs/performance.md, keeping what others wrote around it."""
    section = [
        BEGIN,
        "## The suite's figures (generated by `bench/suite.py`; do not edit by hand)",
        "",
        f"`{command}`, started {began} ({measured_on} at the start; {logging_said(quiet_log)}), client, servers "
        "and PostgreSQL sharing the cores (and other work on this machine: see the load averages). Figures are "
        "min-max over the rounds; "
        "targets are issue 15's (most are set at 10⁵ descriptions and shown at every size). After each phase of "
        "PUTs the suite waits until the SPARQL index has applied them and its worker is idle again (RocksDB's "
        "compactions done; untimed), so the worker's CPU for them is in that phase's CPU column and does not weigh "
        "on the phases after it."
        + (
            f" The Go reference is LinkSmart thing-directory {go.version()} (validation off), restarted on an empty "
            f"store in every round and given {GO_REFERENCE_LOADED:,} descriptions of the catalogue before its PUTs."
            if go is not None
            else " The Go reference directory was not measured in this run: its PUT figure is the one issue 15 quotes."
        ),
    ]
    for report in reports:
        section += report.lines
    section.append(END)
    path = REPO_ROOT / DOCUMENT
    existing = path.read_text() if path.exists() else "# Performance\n\n"
    if BEGIN in existing and END in existing:
        before, rest = existing.split(BEGIN, 1)
        after = rest.split(END, 1)[1]
    else:
        before, after = existing.rstrip("\n") + "\n\n", "\n"
    path.write_text(before + "\n".join(section) + after)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--large", action="store_true", help="add 100,000 descriptions")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--duration", type=float, default=5, help="seconds per phase and round (default 5)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds a start may take")
    parser.add_argument(
        "--no-write", action="store_true", help=f"print only, do not rewrite {DOCUMENT} nor the results file"
    )
    parser.add_argument("--go-reference", metavar="BINARY", help="a LinkSmart thing-directory to measure PUT against")
    parser.add_argument(
        "--quiet-log",
        action="store_true",
        help="run the directory at warning level without its access log (not the default configuration)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=REPO_ROOT / RESULTS,
        help=f"the raw figures of the last run, compared with and then replaced size by size (default {RESULTS})",
    )
    parser.add_argument("--fail-on-regression", action="store_true", help="exit with status 1 when a figure regressed")
    parser.add_argument(
        "--compare-only",
        nargs=2,
        type=Path,
        metavar=("BEFORE", "NOW"),
        help="run nothing: compare two results files (every size of NOW with the same size of BEFORE)",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=regress.SINGLE_SAMPLE_TOLERANCE,
        help="how far (relative) a figure measured once per run may fall before it counts as regressed "
        f"(default {regress.SINGLE_SAMPLE_TOLERANCE:g})",
    )
    return parser.parse_args()


def compare_only(before: Path, now: Path, tolerance: float) -> bool:
    """Print the comparison of two results files; whether a figure regressed."""
    lines, regressed = regress.compare_files(before, now, tolerance)
    print("\n".join(lines))
    return regressed


def run(args: argparse.Namespace) -> bool:
    """Measure every size, compare each with the recorded run and write the document and the results file after
    each size (a long run that fails keeps what it measured); whether a figure regressed."""
    sizes = args.sizes + ([100_000] if args.large and 100_000 not in args.sizes else [])
    command = ("python bench/suite.py " + shlex.join(sys.argv[1:])).strip()
    began = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    measured_on = machine()
    print(f"{command}\n{began}; {measured_on}; {logging_said(args.quiet_log)}", flush=True)
    recorded = regress.load(args.results)
    regressed = False
    go = GoReference(args.go_reference) if args.go_reference else None
    if go is not None:
        print(f"Go reference: {go.binary.name} {go.version()}", flush=True)
    with postgres_server() as admin_url, contextlib.ExitStack() as stack:
        if go is not None:
            stack.callback(go.close)
        reports: list[SizeReport] = []
        for size in sizes:
            reports.append(run_size(size, admin_url, args.rounds, args.duration, args.timeout, go, args.quiet_log))
            reports[-1].record |= {"command": command, "began": began}
            regressed |= compare_recorded(reports[-1], recorded, args.tolerance)
            if not args.no_write:
                write_document(reports, command, began, measured_on, go, args.quiet_log)
                regress.save(args.results, [reports[-1].record])
                print(f"\nwrote {DOCUMENT} and {args.results}", flush=True)
    return regressed


def main() -> None:
    args = arguments()
    regressed = (
        compare_only(args.compare_only[0], args.compare_only[1], args.tolerance) if args.compare_only else run(args)
    )
    if regressed:
        print("\nA figure regressed against the recorded run (see the comparison above).", flush=True)
        if args.fail_on_regression:
            sys.exit(1)


if __name__ == "__main__":
    main()
