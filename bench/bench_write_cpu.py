"""CPU per write of two versions of the directory, in interleaved rounds beside a freshly started Go reference:
bulk import (``registry import``, POST batches) and PUT new, each server on a fresh database.

    python bench/bench_write_cpu.py --reference /tmp/ref-tree --go-reference BINARY [--size 2000] [--rounds 4]

``--reference`` is a source tree of the other version (``git archive <commit> | tar -x -C DIR``); this tree is the
candidate. Each server runs in an interpreter of its own, from its tree, in the default configuration (access log
on) with a pool of 10 connections (as bench/bench_put_workers.py). In each round (the order reversed every other
round), for each version: a fresh database, the server started, ``--size`` descriptions of the catalogue imported
with this tree's ``registry import`` (its wall time, interpreter start included, as bench/suite.py measures it),
the SPARQL index waited for (untimed), then PUT new with 32 clients for ``--duration`` seconds and the index
waited for again (untimed, its CPU counted); CPU per write by role (server process, SPARQL worker, PostgreSQL
backends). The Go reference is restarted on an empty store, given 1,000 descriptions and driven with the same PUTs.
Prints each figure per round, min-max and median, and the candidate's ratios to the reference and to Go round by
round, beside the interpreter, cores and load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_put_index_share import go_reference_rate, new_descriptions
from bench.go_reference import GoReference
from bench.load import drive
from bench.rounds import alternated, load_average, machine, served
from bench.suite import Watched, bulk_import, cpu_snapshot, cpu_spent, index_caught_up, index_settled, worker_idle
from tests.support import servers
from tests.support.servers import ServerProcess, fresh_database, postgres_server

GO = "Go reference"
ROLES = ("server", "worker", "postgres")


def roles(watched: Watched) -> dict[str, list[psutil.Process]]:
    return {"server": [watched.server], "worker": watched.worker(), "postgres": watched.backends()}


def measure(tree: Path, admin_url: str, size: int, duration: float, first_new: int) -> dict[str, float]:
    """One version's round: import rate, PUT new rate, and CPU ms per write by role for each."""
    figures: dict[str, float] = {}
    with fresh_database(admin_url) as database_url:
        servers.REPO_ROOT = tree  # the server's working directory: ``python -m registry`` imports from it
        server = ServerProcess(database_url, served({"REGISTRY_DB_POOL_SIZE": "10"}), fresh_interpreter=True)
        server.start(timeout=180)
        try:
            assert server.process is not None
            watched = Watched(psutil.Process(server.process.pid), database_url)
            worker_idle(watched.worker(), 600, 1)
            before = {role: cpu_snapshot(processes) for role, processes in roles(watched).items()}
            started = time.monotonic()
            figures["import/s"], _ = bulk_import(size, server.base_url)
            index_caught_up(server.base_url, size, started, 1800)
            worker_idle(watched.worker(), 600, 1)
            for role, processes in roles(watched).items():
                figures[f"import {role} ms"] = 1000 * cpu_spent(processes, before.get(role, {})) / size
            before = {role: cpu_snapshot(processes) for role, processes in roles(watched).items()}
            outcome = asyncio.run(drive("127.0.0.1", server.port, new_descriptions(first_new), 32, duration))
            index_settled(server.base_url, 1800)
            worker_idle(watched.worker(), 600, 1)
            failed = sum(count for status, count in outcome.statuses.items() if status >= 300)
            if failed:
                print(f"  {tree}: {failed} of {outcome.requests} PUTs not answered 2xx: {outcome.statuses}")
            figures["PUT new/s"] = outcome.rate
            for role, processes in roles(watched).items():
                figures[f"PUT {role} ms"] = 1000 * cpu_spent(processes, before.get(role, {})) / max(outcome.requests, 1)
        finally:
            server.close()
    return figures


def spread(values: list[float], digits: int) -> str:
    return f"{min(values):,.{digits}f}-{max(values):,.{digits}f} (median {statistics.median(values):,.{digits}f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, required=True, help="source tree of the version compared against")
    parser.add_argument("--go-reference", metavar="BINARY", required=True)
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--duration", type=float, default=10)
    args = parser.parse_args()
    candidate = Path(__file__).resolve().parents[1]
    trees = {"reference": args.reference.resolve(), "candidate": candidate}
    print(f"{machine()}; {args.size:,} descriptions imported, PUT new for {args.duration:.0f} s, 32 clients")
    go = GoReference(args.go_reference)
    results: dict[str, list[dict[str, float]]] = {way: [] for way in trees}
    go_rates: list[float] = []
    go_puts = new_descriptions(100 * args.size)
    with postgres_server() as admin_url:
        try:
            for round_number in range(args.rounds):
                for way in alternated([*trees, GO], round_number):
                    if way == GO:
                        go_rates.append(go_reference_rate(go, go_puts, args.duration))
                    else:
                        results[way].append(measure(trees[way], admin_url, args.size, args.duration, args.size))
                shown = "; ".join(
                    f"{way}: import {results[way][-1]['import/s']:,.0f}/s, "
                    f"PUT new {results[way][-1]['PUT new/s']:,.0f}/s"
                    for way in trees
                )
                print(
                    f"round {round_number + 1}/{args.rounds}: {shown}; Go PUT new {go_rates[-1]:,.0f}/s; "
                    f"load average {load_average()}",
                    flush=True,
                )
        finally:
            servers.REPO_ROOT = candidate
            go.close()
    print()
    for key in results["candidate"][0]:
        digits = 0 if key.endswith("/s") else 2
        line = " | ".join(f"{way} {spread([r[key] for r in results[way]], digits)}" for way in trees)
        ratios = [c[key] / r[key] for c, r in zip(results["candidate"], results["reference"], strict=True) if r[key]]
        print(f"{key}: {line} | candidate/reference {spread(ratios, 2)}")
    print(f"Go reference PUT new/s: {spread(go_rates, 0)}")
    for way in trees:
        ratios = [r["PUT new/s"] / g for r, g in zip(results[way], go_rates, strict=True)]
        print(f"{way} PUT new / Go reference: {spread(ratios, 2)}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
