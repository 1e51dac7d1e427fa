"""What putting back a description costs the SPARQL index, against adding a new one, as the index grows; and what
adding a burst of new ones costs.

In process: builds an on-disk index of ``--size`` generated descriptions (bench/catalogue.py, bulk-loaded as at a
rebuild), then, in each of ``--rounds`` interleaved rounds, adds ``--count`` new descriptions one at a time (the
reference), adds ``--count`` more in bursts of ``--burst`` (one ``RdfIndex.replace`` each: bulk-loaded from
``BULK_FROM`` on), puts back ``--count`` existing ones with changed text, and times the steps of a put-back one by one
on further descriptions: dropping its graph, inserting its new triples. Run it at several sizes: a put-back should
cost the same at each (in proportion to the description, not to the index).

The times are of the writing thread. RocksDB then flushes and compacts on threads of its own, for the adds above all
(their keys land all over the index): for the two ways of adding, the process's CPU until that work has ended is
also summed over the rounds (a compaction lands in whichever round crosses its threshold).

    python bench/bench_index_replace.py [--size 20000] [--count 200] [--burst 250] [--rounds 3]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.catalogue import description, thing_id
from bench.rounds import alternated, machine, print_against
from registry.semantic.graphs import graph_name
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter
from registry.sparql.worker.index import BULK_FROM, RdfIndex


def per_description_ms(work: Callable[[tuple[str, str]], object], rows: list[tuple[str, str]]) -> float:
    started = time.perf_counter()
    for row in rows:
        work(row)
    return (time.perf_counter() - started) / len(rows) * 1000


def in_bursts_ms(index: RdfIndex, rows: list[tuple[str, str]], burst: int) -> float:
    started = time.perf_counter()
    for first in range(0, len(rows), burst):
        index.replace(rows[first : first + burst])
    return (time.perf_counter() - started) / len(rows) * 1000


def settled(index: RdfIndex, work: Callable[[], float]) -> tuple[float, float]:
    """``work``'s figure, and the process's CPU (s, every thread: RocksDB's too) for it and the flushing and
    compacting after it."""
    started = time.process_time()
    figure = work()
    index.store.flush()
    while True:  # until RocksDB's threads have stopped working (under 10 ms of CPU in half a second)
        before = time.process_time()
        time.sleep(0.5)
        if time.process_time() - before < 0.01:
            return figure, before - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--burst", type=int, default=250, help=f"bulk-loaded from {BULK_FROM}")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{machine()}; index of {args.size:,} descriptions")
    converter = RdfConverter(ContextLibrary.load())

    def rows(indexes: list[int], revision: int = 0) -> list[tuple[str, str]]:
        return [
            (thing_id(index), converter.convert(description(index, revision=revision)).ntriples) for index in indexes
        ]

    index = RdfIndex.open(Path(tempfile.mkdtemp(prefix="bench-index-replace-")), "bench")
    started = time.perf_counter()
    for first in range(0, args.size, 2000):
        index.load(rows(list(range(first, min(first + 2000, args.size)))))
    print(f"built in {time.perf_counter() - started:.1f} s: {len(index):,} quads\n")
    rng = random.Random(1)
    fresh = itertools.count(args.size)
    revisions = itertools.count(1)
    index.replace(rows([next(fresh) for _ in range(args.count)]))  # warm-up, not counted
    figures: dict[str, list[float]] = {}
    settled_cpu: dict[str, float] = {}
    one_at_a_time, in_bursts = "add a new description (reference)", f"add new descriptions in bursts of {args.burst}"
    for round_number in range(args.rounds):
        added = rows([next(fresh) for _ in range(args.count)])
        burst = rows([next(fresh) for _ in range(args.count)])
        replaced = rows(rng.sample(range(args.size), args.count), next(revisions))
        stepped = rows(rng.sample(range(args.size), args.count), next(revisions))
        ways = [
            (one_at_a_time, functools.partial(per_description_ms, lambda row: index.replace([row]), added)),
            (in_bursts, functools.partial(in_bursts_ms, index, burst, args.burst)),
        ]
        for name, work in alternated(ways, round_number):
            figure, cpu = settled(index, work)
            figures.setdefault(name, []).append(figure)
            settled_cpu[name] = settled_cpu.get(name, 0.0) + cpu
        figures.setdefault("put back a description (replace)", []).append(
            per_description_ms(lambda row: index.replace([row]), replaced)
        )
        steps = {
            "  step: drop its graph": lambda row: index.store.update(f"DROP GRAPH {graph_name(row[0])}"),
            "  step: insert its triples": lambda row: index.store.update(
                f"INSERT DATA {{ GRAPH {graph_name(row[0])} {{ {row[1]} }} }}"
            ),
        }
        for name, step in steps.items():
            figures.setdefault(name, []).append(per_description_ms(step, stepped))
    print_against(
        "per description | ms, median (min-max)",
        figures,
        one_at_a_time,
        lambda values: f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})",
    )
    count = args.rounds * args.count
    print("\n| adding, with RocksDB's flushing and compacting after | CPU ms per description, all rounds |")
    print("|---|---:|")
    for name, seconds in settled_cpu.items():
        print(f"| {name} | {seconds / count * 1000:.2f} |")
    print(f"\nload average after: {os.getloadavg()}")
    index.close()


if __name__ == "__main__":
    main()
