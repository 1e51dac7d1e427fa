"""What the SPARQL index's deferral does to a bulk import: ``registry import`` of the generated catalogue into a
fresh directory with ``REGISTRY_SPARQL_INDEX_DEFER`` at each of ``--defers`` seconds, in interleaved rounds.

Each run starts the directory on a fresh database, waits until SPARQL answers, imports ``--size`` descriptions (as
bench/suite.py does: 16 batches of 100 in flight) and waits until the index holds the last of them. It prints the
import rate, the CPU per description of the server, the SPARQL worker and PostgreSQL during the import, and how long
the index took to catch up after it: the index held back longer leaves the writes its cores, and catches up later.

    python bench/bench_import.py [--size 100000] [--rounds 2] [--defers 10,3600]

A value ``idle`` among ``--defers`` imports into a directory that was never asked a SPARQL query, in the default
configuration (``REGISTRY_SPARQL_START=on-demand``): no SPARQL worker runs, so none indexes the writes (its
"caught up" column is 0).

With ``--reference DIR`` (a source tree of another version: ``git archive <commit> | tar -x -C DIR``) it compares
that version with this tree instead, at the first of ``--defers``, each server in an interpreter of its own, in
rounds that alternate which goes first, and prints the ratio this/reference of each round: the rates and CPU of
the two move together with the load of a shared host, their ratio much less.

    python bench/bench_import.py --reference DIR [--size 10000] [--rounds 6] [--defers 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.rounds import add_logging_option, alternated, load_average, machine, served, use_logging_option
from bench.suite import Watched, bulk_import, cpu_snapshot, cpu_spent, index_caught_up
from tests.support.servers import ServerProcess, fresh_database, postgres_server, sparql_answer

#: The ``--defers`` value of a directory whose SPARQL worker never started (no SPARQL query was asked).
IDLE = "idle"


def import_once(
    admin_url: str, size: int, defer: str, checkout: Path | None = None
) -> tuple[float, list[float], float]:
    """The import rate, CPU ms per description by role (server, worker, PostgreSQL) and seconds to catch up;
    ``checkout``: the source tree the server runs from (this one by default)."""
    idle = defer == IDLE
    settings = {"REGISTRY_DB_POOL_SIZE": "10", **({} if idle else {"REGISTRY_SPARQL_INDEX_DEFER": defer})}
    with fresh_database(admin_url) as database_url:
        server = ServerProcess(database_url, served(settings), checkout=checkout).start(timeout=180)
        try:
            if not idle:
                sparql_answer(server.base_url, "ASK { ?s ?p ?o }", 120)
            assert server.process is not None
            roles = Watched(psutil.Process(server.process.pid), database_url).roles()
            before = {role: cpu_snapshot(processes) for role, processes in roles.items()}
            rate, _ = bulk_import(size, server.base_url)
            cpu = [cpu_spent(processes, before[role]) / size * 1000 for role, processes in roles.items()]
            caught_up = 0.0 if idle else index_caught_up(server.base_url, size, time.monotonic(), 3600)
        finally:
            server.close()
    return rate, cpu, caught_up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--defers", default="10,3600", help="REGISTRY_SPARQL_INDEX_DEFER values, comma-separated")
    parser.add_argument("--reference", type=Path, help="source tree of a version to compare this one with")
    add_logging_option(parser)
    args = parser.parse_args()
    print(use_logging_option(args))
    if args.reference is not None:
        compare(args.reference.resolve(), args.size, args.rounds, args.defers.split(",")[0])
        return
    defers = args.defers.split(",")
    print(f"{machine()}; {args.size:,} descriptions")
    runs: dict[str, list[tuple[float, list[float], float]]] = {defer: [] for defer in defers}
    with postgres_server() as admin_url:
        for round_number in range(args.rounds):
            for defer in alternated(defers, round_number):
                runs[defer].append(import_once(admin_url, args.size, defer))
                rate, cpu, caught_up = runs[defer][-1]
                shown = " / ".join(f"{ms:.2f}" for ms in cpu)
                print(
                    f"  defer {defer} s: {rate:,.0f}/s, CPU ms per description {shown}, "
                    f"index caught up {caught_up:.1f} s after; load average {load_average()}",
                    flush=True,
                )
    print()
    print(
        "| REGISTRY_SPARQL_INDEX_DEFER | imports/s | median | CPU ms per description: server, worker, PostgreSQL | "
        "index caught up after (s) |"
    )
    print("|---:|---:|---:|---|---:|")
    for defer, results in runs.items():
        rates = [rate for rate, _, _ in results]
        by_role = [[run[1][role] for run in results] for role in range(3)]
        cpu = " / ".join(f"{min(values):.2f}-{max(values):.2f}" for values in by_role)
        waits = [caught_up for _, _, caught_up in results]
        print(
            f"| {defer} | {min(rates):,.0f}-{max(rates):,.0f} | {statistics.median(rates):,.0f} | {cpu} | "
            f"{min(waits):.1f}-{max(waits):.1f} |"
        )
    print(f"\nload average after: {load_average()}")


def compare(reference: Path, size: int, rounds: int, defer: str) -> None:
    """This tree against ``reference`` in interleaved rounds: rates, server CPU per description and their ratios."""
    trees = {"reference": reference, "this": Path(__file__).resolve().parents[1]}
    print(f"{machine()}; {size:,} descriptions; REGISTRY_SPARQL_INDEX_DEFER {defer}; reference {reference}")
    runs: dict[str, list[tuple[float, list[float], float]]] = {name: [] for name in trees}
    with postgres_server() as admin_url:
        for round_number in range(rounds):
            for name in alternated(list(trees), round_number):
                runs[name].append(import_once(admin_url, size, defer, trees[name]))
                rate, cpu, _ = runs[name][-1]
                shown = " / ".join(f"{ms:.2f}" for ms in cpu)
                print(
                    f"  {name}: {rate:,.0f}/s, CPU ms per description {shown}; load average {load_average()}",
                    flush=True,
                )
    rate_ratios = [new[0] / old[0] for old, new in zip(runs["reference"], runs["this"], strict=True)]
    cpu_ratios = [new[1][0] / old[1][0] for old, new in zip(runs["reference"], runs["this"], strict=True)]
    print()
    print("| figure | reference (min-max, median) | this | this/reference per round (min-max, median) |")
    print("|---|---|---|---|")
    for label, values, ratios in (
        ("imports/s", [[run[0] for run in runs[name]] for name in trees], rate_ratios),
        ("server CPU ms per description", [[run[1][0] for run in runs[name]] for name in trees], cpu_ratios),
    ):
        shown = [f"{min(each):,.2f}-{max(each):,.2f} ({statistics.median(each):,.2f})" for each in values]
        print(
            f"| {label} | {shown[0]} | {shown[1]} | "
            f"{min(ratios):.2f}-{max(ratios):.2f} ({statistics.median(ratios):.2f}) |"
        )
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
