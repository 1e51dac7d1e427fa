"""Start-up at scale: how soon the Things API and SPARQL answer after `registry serve` starts, on a first start
(the SPARQL index is built from the stored RDF) and on a restart (the on-disk index catches up), and the RSS of
the server and its SPARQL worker.

    python bench/bench_startup.py --sizes 1000 10000 100000

Descriptions are generated in the database (tests/support/generated.py) with the RDF of the seed WeatherAgent
under each id, so no registration runs. Client, server and PostgreSQL share this machine (core count and load
are printed). Targets (issue 15) at 100,000: API <= 5 s after start, SPARQL <= 30 s, all processes <= 1 GB RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

import httpx
import psutil
from sqlalchemy import Text, bindparam, text

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from registry.semantic.loader import ContextLibrary  # noqa: E402
from registry.semantic.rdf import RdfConverter  # noqa: E402
from registry.store.database import Database  # noqa: E402
from tests.support.generated import generate  # noqa: E402
from tests.support.servers import ServerProcess, fresh_database, postgres_server  # noqa: E402

PLACEHOLDER = "urn:bench:placeholder"
_RDF = text(
    "INSERT INTO description_rdf (thing_id, revision, ntriples, unknown_contexts, error) "
    "SELECT id, revision, replace(:template, :placeholder, id), '[]'::jsonb, NULL FROM descriptions"
).bindparams(bindparam("template", type_=Text), bindparam("placeholder", type_=Text))
CAPABILITY_QUERY = "SELECT ?thing WHERE { ?thing td:title ?title } LIMIT 50"


async def populate(url: str, size: int) -> None:
    agent = json.loads((REPO_ROOT / "tests" / "fixtures" / "weather-agent.td.json").read_text())
    ntriples = RdfConverter(ContextLibrary.load()).convert({**agent, "id": PLACEHOLDER}).ntriples
    database = Database(url, connections=2)
    await database.open()
    try:
        await generate(database, size)
        await database.execute(_RDF, template=ntriples, placeholder=PLACEHOLDER)
    finally:
        await database.close()


def rss_mb(process: psutil.Process) -> float:
    tree = [process, *process.children(recursive=True)]
    return sum(member.memory_info().rss for member in tree if member.is_running()) / 2**20


def start_and_time(server: ServerProcess, timeout: float) -> tuple[float, float, float]:
    """Seconds until GET /things/{id} answers 200, until SPARQL answers 200, and the RSS (MB) then."""
    started = time.monotonic()
    server.start(timeout=timeout)
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        while http.get("/things/urn:gen:1").status_code != 200:
            time.sleep(0.05)
        api = time.monotonic() - started
        while http.get("/search/sparql", params={"query": CAPABILITY_QUERY}).status_code != 200:
            if time.monotonic() - started > timeout:
                raise RuntimeError("SPARQL did not become ready")
            time.sleep(0.1)
        sparql = time.monotonic() - started
        assert server.process is not None
        return api, sparql, rss_mb(psutil.Process(server.process.pid))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {', '.join(f'{value:.2f}' for value in os.getloadavg())}")
    print("| descriptions | start | API answers (s) | SPARQL answers (s) | RSS server + worker (MB) |")
    print("|---:|---|---:|---:|---:|")
    with postgres_server() as admin:
        for size in args.sizes:
            with fresh_database(admin) as url:
                asyncio.run(populate(url, size))
                server = ServerProcess(url, {"REGISTRY_LOG_LEVEL": "info"})
                try:
                    for label in ("first (index built)", "restart (index caught up)"):
                        api, sparql, rss = start_and_time(server, args.timeout)
                        print(f"| {size:,} | {label} | {api:.1f} | {sparql:.1f} | {rss:.0f} |", flush=True)
                        server.stop()
                finally:
                    server.close()
    print(f"load average after: {', '.join(f'{value:.2f}' for value in os.getloadavg())}")


if __name__ == "__main__":
    main()
