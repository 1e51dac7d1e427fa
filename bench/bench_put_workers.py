"""PUT new with one server process and with several (``registry serve --workers N``), against a freshly started
Go reference directory, in interleaved rounds.

At 32 clients a single server process is the bound of PUT new: its event loop runs the HTTP layer, validation,
projections and the group commit's statements for every write, while the Go directory spreads its handlers over
every core. This measures what ``--workers N`` changes on the same machine, database and on-disk SPARQL index.

Loads ``--size`` descriptions of the catalogue with ``registry import`` (as bench/suite.py does) and waits until the
index has caught up. Then, in each of ``--rounds`` rounds (the order reversed every other round), for each process
count of ``--workers``: restart the directory with that many processes (untimed; the index is on disk and kept),
PUT new descriptions with 32 clients for ``--duration`` seconds, and wait (untimed) until the index has applied
them and its worker is idle; and PUT new at the Go reference, restarted on an empty store and given 1,000
descriptions first, as in the suite. Prints PUT/s, the directory's CPU per PUT (its server processes, SPARQL worker
and PostgreSQL backends) and the ratios to the Go reference.

    python bench/bench_put_workers.py --go-reference BINARY [--size 10000] [--workers 1 2] [--rounds 3]
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
from bench.rounds import (
    add_logging_option,
    alternated,
    load_average,
    machine,
    print_against,
    served,
    use_logging_option,
)
from bench.suite import (
    Watched,
    bulk_import,
    cpu_snapshot,
    cpu_spent,
    index_caught_up,
    index_settled,
    worker_idle,
)
from tests.support.servers import ServerProcess, fresh_database, postgres_server

GO = "Go reference"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--go-reference", metavar="BINARY", required=True)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8)
    add_logging_option(parser)
    args = parser.parse_args()
    print(use_logging_option(args))
    print(f"{machine()}; {args.size:,} descriptions")
    go = GoReference(args.go_reference)
    process_counts = {f"{count} server process{'es' if count > 1 else ''}": count for count in args.workers}
    rates: dict[str, list[float]] = {way: [] for way in [*process_counts, GO]}
    cpu_per_put: dict[str, list[float]] = {way: [] for way in process_counts}
    with postgres_server() as admin_url, fresh_database(admin_url) as database_url:
        server = ServerProcess(database_url, served({"REGISTRY_DB_POOL_SIZE": "10"})).start(timeout=120)
        try:
            rate, _ = bulk_import(args.size, server.base_url)
            index_caught_up(server.base_url, args.size, time.monotonic(), 3600)
            print(f"imported at {rate:,.0f}/s; index caught up\n")
            directory_puts = new_descriptions(args.size)
            go_puts = new_descriptions(10 * args.size)

            def put_new(way: str) -> None:
                if way == GO:
                    rates[way].append(go_reference_rate(go, go_puts, args.duration))
                    return
                server.stop()
                server.env["REGISTRY_WORKERS"] = str(process_counts[way])
                server.start(timeout=120)
                index_settled(server.base_url, 3600)
                assert server.process is not None
                watched = Watched(psutil.Process(server.process.pid), database_url)
                worker_idle(watched.worker(), 1800, 1)
                # The supervisor, its server processes and the SPARQL worker, and the database's backends.
                charged = [watched.server, *watched.worker(), *watched.backends()]
                before = cpu_snapshot(charged)
                outcome = asyncio.run(drive("127.0.0.1", server.port, directory_puts, 32, args.duration))
                index_settled(server.base_url, 3600)  # untimed: every write applied, its CPU counted
                worker_idle(watched.worker(), 1800, 1)
                rates[way].append(outcome.rate)
                failed = sum(count for status, count in outcome.statuses.items() if status >= 300)
                if failed:
                    print(f"  {way}: {failed} of {outcome.requests} PUTs not answered 2xx: {outcome.statuses}")
                cpu_per_put[way].append(1000 * cpu_spent(charged, before) / max(outcome.requests, 1))

            for round_number in range(args.rounds):
                for way in alternated(list(rates), round_number):
                    put_new(way)
                figures = ", ".join(f"{way} {values[-1]:,.0f}/s" for way, values in rates.items())
                print(f"round {round_number + 1}/{args.rounds}: {figures}; load average {load_average()}", flush=True)
        finally:
            server.close()
            go.close()
    print()
    print_against("PUT new, 32 clients | PUT/s", rates, GO, lambda values: f"{min(values):,.0f}-{max(values):,.0f}")
    print()
    for way, values in cpu_per_put.items():
        print(f"{way}: CPU per PUT (servers, SPARQL worker, PostgreSQL) {statistics.median(values):.2f} ms median")
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
