"""Memory of a replica by corpus size: what Kubernetes requests and limits are derived from (deploy/kubernetes).

Loads generated agents and tools (bench/catalogue.py) through the directory service with every projection the
server runs (RDF and catalog), in steps, and after each step starts one ``registry serve`` on the database, waits
until ``/readyz`` (SPARQL index built), drives a round of reads and searches, and reads the resident memory (VmRSS
and its peak, VmHWM) of the server process and of its SPARQL worker from /proc. The empty database is the
reference, measured in the same run.

    python bench/bench_memory.py --steps 0,1000,5000,10000 [--rounds 3] [--admin-url postgresql://…]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import httpx
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.catalogue import description
from bench.rounds import add_logging_option, machine, served, use_logging_option
from registry.config import Settings
from registry.directory.service import DirectoryService
from registry.projections import Projections
from registry.projections.catalog import CatalogProjector
from registry.projections.rdf import RdfProjector
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter
from registry.store.database import Database
from registry.store.things import ThingStore
from tests.support.servers import LOCAL_POSTGRES, ServerProcess, fresh_database


async def load(url: str, start: int, stop: int) -> float:
    database = Database(url, connections=9)
    await database.open()
    projections = Projections(
        [RdfProjector(RdfConverter(ContextLibrary.load(None)), strict_contexts=False), CatalogProjector()]
    )
    directory = DirectoryService(database, ThingStore(database), projections, Settings())
    semaphore = asyncio.Semaphore(8)

    async def register(index: int) -> None:
        document = description(index)
        async with semaphore:
            await directory.put(document["id"], document)

    started = time.perf_counter()
    await asyncio.gather(*(register(index) for index in range(start, stop)))
    await database.execute(text("ANALYZE"))  # as autovacuum would after a bulk load
    await database.close()
    return time.perf_counter() - started


def _status(pid: int) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in {"VmRSS", "VmHWM"}:
            values[name] = int(rest.split()[0]) // 1024
    return values


def _worker_pid(pid: int) -> int | None:
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        if b"registry.sparql.worker" in Path(f"/proc/{child}/cmdline").read_bytes():
            return int(child)
    return None


def measure(url: str, rounds: int) -> list[tuple[dict[str, int], dict[str, int]]]:
    samples = []
    for _ in range(rounds):
        index_dir = Path(f"/tmp/bench-memory-index-{os.getpid()}")
        server = ServerProcess(
            url, served({"REGISTRY_SPARQL_INDEX_DIR": str(index_dir), "REGISTRY_PURGE_INTERVAL": "3600"})
        )
        with server, httpx.Client(base_url=server.base_url, timeout=120) as http:
            deadline = time.monotonic() + 600
            while http.get("/readyz").status_code != 200:
                if time.monotonic() > deadline:
                    raise RuntimeError("not ready within 600 s")
                time.sleep(0.5)
            for number in range(20):
                http.get("/api/v1/search", params={"q": f"topic {number}", "capability": f"capability-{number}"})
                http.get("/things", params={"limit": 100, "offset": number * 100})
                http.get("/search/sparql", params={"query": "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"})
            assert server.process is not None
            worker = _worker_pid(server.process.pid)
            samples.append((_status(server.process.pid), _status(worker) if worker else {}))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", default="0,1000,5000,10000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--admin-url", default=LOCAL_POSTGRES)
    add_logging_option(parser)
    arguments = parser.parse_args()
    print(use_logging_option(arguments))
    print(machine())
    steps = [int(step) for step in arguments.steps.split(",")]
    with fresh_database(arguments.admin_url) as url:
        loaded = 0
        reference: float | None = None
        for step in steps:
            if step > loaded:
                seconds = asyncio.run(load(url, loaded, step))
                print(f"loaded {step - loaded} descriptions in {seconds:.0f} s")
                loaded = step
            samples = measure(url, arguments.rounds)
            server_rss = [server["VmRSS"] for server, _ in samples]
            worker_rss = [worker.get("VmRSS", 0) for _, worker in samples]
            worker_peak = [worker.get("VmHWM", 0) for _, worker in samples]
            total = [a + b for a, b in zip(server_rss, worker_rss, strict=True)]
            reference = statistics.median(total) if reference is None else reference

            def spread(values: list[int]) -> str:
                return f"median {statistics.median(values):.0f} MB (min {min(values)}, max {max(values)})"

            print(
                f"{step:>6} descriptions: server {spread(server_rss)}; worker {spread(worker_rss)}, "
                f"worker peak {spread(worker_peak)}; together {spread(total)}, "
                f"{statistics.median(total) / reference:.2f}x the empty reference; load {os.getloadavg()[0]:.1f}"
            )


if __name__ == "__main__":
    main()
