"""What putting back a description costs the SPARQL index, against adding a new one, as the index grows.

In process: builds an on-disk index of ``--size`` generated descriptions (bench/catalogue.py, bulk-loaded as at a
rebuild), then, in each of ``--rounds`` interleaved rounds, adds ``--count`` new descriptions (the reference) and
puts back ``--count`` existing ones with changed text (``RdfIndex.replace``), and times the steps of a put-back
one by one on further descriptions: dropping its graph, inserting its new triples. Run it at several sizes: a
put-back should cost the same at each (in proportion to the description, not to the index).

    python bench/bench_index_replace.py [--size 20000] [--count 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
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
from registry.semantic.graphs import graph_name
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter
from registry.sparql_worker.index import RdfIndex


def per_description_ms(work: Callable[[tuple[str, str]], object], rows: list[tuple[str, str]]) -> float:
    started = time.perf_counter()
    for row in rows:
        work(row)
    return (time.perf_counter() - started) / len(rows) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()}; index of {args.size:,} descriptions")
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
    for _ in range(args.rounds):
        added = rows([next(fresh) for _ in range(args.count)])
        replaced = rows(rng.sample(range(args.size), args.count), next(revisions))
        stepped = rows(rng.sample(range(args.size), args.count), next(revisions))
        figures.setdefault("add a new description (reference)", []).append(
            per_description_ms(lambda row: index.replace([row]), added)
        )
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
    reference = figures["add a new description (reference)"]
    print("| per description | ms, median (min-max) | x adding one |")
    print("|---|---:|---:|")
    for name, values in figures.items():
        ratios = [value / base for value, base in zip(values, reference, strict=True)]
        print(
            f"| {name} | {statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f}) "
            f"| {min(ratios):.2f}-{max(ratios):.2f} |"
        )
    print(f"\nload average after: {os.getloadavg()}")
    index.close()


if __name__ == "__main__":
    main()
