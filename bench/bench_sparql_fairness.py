"""What one client's runaway SPARQL queries cost another client: one server (REGISTRY_SPARQL_TIMEOUT=1, the default
concurrency of 2) holding 41 small descriptions; one anonymous client (127.0.0.2) keeps ``--in-flight`` queries in
flight that only a kill of the query worker stops (a fourfold cross product of every triple), while another
(127.0.0.3) sends ``--queries`` simple queries one after the other. Prints, per number in flight, the other
client's answers and latencies, and how often the worker was killed; then how long the query worker takes to answer
again after it is killed while idle (``--kills`` times).

``--code DIR`` runs the server from another checkout (say, an older commit unpacked with ``git archive``), to
compare.

    python bench/bench_sparql_fairness.py [--in-flight 2 8] [--queries 40] [--kills 5] [--workers 1] [--code DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tests.support.servers as servers
from bench.rounds import add_logging_option, machine, served, use_logging_option
from tests.support.servers import ServerProcess, fresh_database, postgres_server, sparql_workers
from tests.support.things import thing

RUNAWAY = "SELECT (COUNT(*) AS ?c) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
SIMPLE = "SELECT ?t WHERE { GRAPH <urn:test:fair> { ?a td:title ?t } }"


def client_at(base_url: str, address: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=120, transport=httpx.HTTPTransport(local_address=address))


def restarts(http: httpx.Client) -> float:
    found = re.search(r"^registry_sparql_worker_restarts_total (\S+)$", http.get("/metrics").text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def attack(base_url: str, in_flight: int, queries: int) -> None:
    stop = threading.Event()
    statuses: list[int] = []

    def runaway() -> None:
        with client_at(base_url, "127.0.0.2") as http:
            while not stop.is_set():
                statuses.append(http.get("/search/sparql", params={"query": RUNAWAY}).status_code)

    threads = [threading.Thread(target=runaway, daemon=True) for _ in range(in_flight)]
    with client_at(base_url, "127.0.0.3") as other:
        before = restarts(other)
        for thread in threads:
            thread.start()
        time.sleep(1.5)
        answers: list[tuple[int, float]] = []
        for _ in range(queries):
            started = time.monotonic()
            answer = other.get("/search/sparql", params={"query": SIMPLE})
            answers.append((answer.status_code, time.monotonic() - started))
            if answer.status_code != 200:
                print(f"  the other client got {answer.status_code}: {answer.text}")
            time.sleep(0.2)
        stop.set()
        for thread in threads:
            thread.join(60)
        killed = restarts(other) - before
    latencies = sorted(latency for _, latency in answers)
    counted = {status: sum(1 for answer, _ in answers if answer == status) for status, _ in answers}
    print(
        f"{in_flight} runaways in flight: other client's answers {counted}, latency p50 "
        f"{statistics.median(latencies) * 1000:.0f} ms, p95 {statistics.quantiles(latencies, n=20)[-1] * 1000:.0f} ms, "
        f"max {latencies[-1] * 1000:.0f} ms; worker killed {killed:g} times; runaways answered "
        f"{ {status: statuses.count(status) for status in set(statuses)} }"
    )


def restart_times(server: ServerProcess, kills: int) -> None:
    took: list[float] = []
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        time.sleep(3)  # the last runaway's worker is replaced
        for _ in range(kills):
            workers = sparql_workers(server)
            os.kill(workers[0], signal.SIGKILL)
            started = time.monotonic()
            while http.get("/search/sparql", params={"query": SIMPLE}).status_code != 200:
                time.sleep(0.01)
            took.append(time.monotonic() - started)
            time.sleep(2)  # the next standby starts
    print(f"answering again after a kill of the idle worker: {', '.join(f'{t * 1000:.0f}' for t in took)} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--in-flight", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--code", type=Path, help="run the server from this checkout")
    parser.add_argument("--workers", type=int, default=1, help="server processes (REGISTRY_WORKERS)")
    add_logging_option(parser)
    arguments = parser.parse_args()
    print(use_logging_option(arguments))
    if arguments.code:
        servers.REPO_ROOT = arguments.code.resolve()
    print(machine())
    with (
        postgres_server() as admin,
        fresh_database(admin) as url,
        ServerProcess(
            url, served({"REGISTRY_SPARQL_TIMEOUT": "1", "REGISTRY_WORKERS": str(arguments.workers)})
        ) as server,
    ):
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            http.put("/things/urn:test:fair", json=thing("Fair", id="urn:test:fair")).raise_for_status()
            http.post("/api/v1/things/batch", json=[thing(f"Padding {n}") for n in range(40)]).raise_for_status()
        for in_flight in arguments.in_flight:
            attack(server.base_url, in_flight, arguments.queries)
        restart_times(server, arguments.kills)


if __name__ == "__main__":
    main()
