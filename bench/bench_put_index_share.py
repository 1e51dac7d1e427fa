"""What the local SPARQL index costs PUT new: the directory with its SPARQL worker running, the same directory with
the worker stopped (SIGSTOP) while the PUTs run, and a freshly started Go reference, in interleaved rounds.

Loads ``--size`` descriptions of the catalogue with ``registry import`` (as bench/suite.py does) and waits until the
index has caught up and the worker is idle. Then, in each of ``--rounds`` rounds (the order reversed every other
round), PUTs new descriptions with 32 clients for ``--duration`` seconds: (1) as is, (2) with the worker and its
threads stopped, continued and caught up afterwards (untimed), (3) at the Go reference, restarted on an empty store
and given 1,000 descriptions first, as in the suite. The difference between (1) and (2) is the share of the index,
which the directory's PUT does not wait for (it follows the change log) but which shares the machine's cores.

    python bench/bench_put_index_share.py --go-reference BINARY [--size 100000] [--rounds 3] [--duration 8]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.catalogue import description
from bench.go_reference import GoReference
from bench.load import Request, drive
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
    TD_JSON,
    bulk_import,
    fresh_go_reference,
    index_caught_up,
    index_settled,
    worker_idle,
)
from tests.support.servers import ServerProcess, fresh_database, postgres_server


def new_descriptions(first: int) -> Callable[[int, int], Request]:
    """PUTs of descriptions of the catalogue not written before, from ``first`` on."""
    fresh = itertools.count(first)

    def put_new(_: int, __: int) -> Request:
        document = description(next(fresh))
        return "PUT", "/things/" + quote(document["id"], safe=":"), json.dumps(document).encode(), TD_JSON

    return put_new


def go_reference_rate(go: GoReference, puts: Callable[[int, int], Request], duration: float) -> float:
    """PUT/s of 32 clients at the Go reference, restarted on an empty store and given 1,000 descriptions of the
    catalogue first (as in the suite), then stopped."""
    fresh_go_reference(go, 1000)
    try:
        return asyncio.run(drive("127.0.0.1", go.port, puts, 32, duration)).rate
    finally:
        go.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--go-reference", metavar="BINARY", required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8)
    add_logging_option(parser)
    args = parser.parse_args()
    print(use_logging_option(args))
    print(f"{machine()}; {args.size:,} descriptions")
    go = GoReference(args.go_reference)
    with postgres_server() as admin_url, fresh_database(admin_url) as database_url:
        server = ServerProcess(database_url, served({"REGISTRY_DB_POOL_SIZE": "10"})).start(timeout=120)
        try:
            rate, _ = bulk_import(args.size, server.base_url)
            index_caught_up(server.base_url, args.size, time.monotonic(), 3600)
            assert server.process is not None
            worker = psutil.Process(server.process.pid).children(recursive=True)
            worker_idle(worker, 1800, 2)
            print(f"imported at {rate:,.0f}/s; index caught up, worker idle\n")
            directory_puts = new_descriptions(args.size)
            go_puts = new_descriptions(10 * args.size)
            rates: dict[str, list[float]] = {"index running": [], "index stopped": [], "Go reference": []}

            def put_new(way: str) -> float:
                if way == "Go reference":
                    return go_reference_rate(go, go_puts, args.duration)
                stopped = way == "index stopped"
                if stopped:
                    for process in worker:
                        process.send_signal(signal.SIGSTOP)
                try:
                    return asyncio.run(drive("127.0.0.1", server.port, directory_puts, 32, args.duration)).rate
                finally:
                    if stopped:
                        for process in worker:
                            process.send_signal(signal.SIGCONT)
                    index_settled(server.base_url, 3600)  # untimed: every write applied
                    worker_idle(worker, 1800, 1)

            for round_number in range(args.rounds):
                for way in alternated(list(rates), round_number):
                    rates[way].append(put_new(way))
                print(f"round {round_number + 1}/{args.rounds} done, load average {load_average()}", flush=True)
        finally:
            server.close()
            go.close()
    print()
    print_against(
        "PUT new, 32 clients | PUT/s", rates, "Go reference", lambda values: f"{min(values):,.0f}-{max(values):,.0f}"
    )
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
