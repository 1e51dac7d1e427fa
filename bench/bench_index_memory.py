"""Memory and CPU of the SPARQL index while a bulk load is applied to it, as the worker's follower applies it.

Converts generated agents and tools (bench/catalogue.py) to N-Triples once, then, in a fresh on-disk index, applies
them in batches of 500 (what the follower does with the changes of ``registry import``), then puts every one back
(the replace path), reading the process's resident memory (VmRSS) and address space (VmSize, what
``REGISTRY_SPARQL_MEMORY_LIMIT`` caps) after each batch and the CPU per description. The reference is the same
process before the index is opened.

    python bench/bench_index_memory.py [--count 5000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.catalogue import description
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter
from registry.sparql_worker.index import RdfIndex

BATCH = 500


def _memory() -> tuple[int, int]:
    """(VmRSS, VmSize) in MB."""
    values = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in {"VmRSS", "VmSize"}:
            values[name] = int(rest.split()[0]) // 1024
    return values["VmRSS"], values["VmSize"]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


Curve = list[tuple[str, int, int, int]]


def one_round(rows: list[tuple[str, str]]) -> tuple[Curve, dict[str, float]]:
    """Apply ``rows`` to a fresh on-disk index, then put them all back; memory after each batch."""
    with tempfile.TemporaryDirectory(prefix="bench-index-") as directory:
        index = RdfIndex.open(Path(directory), "bench")
        curve: Curve = []
        cpu: dict[str, float] = {}
        for phase in ("insert", "replace"):
            started = _cpu()
            for start in range(0, len(rows), BATCH):
                index.replace(rows[start : start + BATCH])
                curve.append((phase, start + BATCH, *_memory()))
            cpu[phase] = (_cpu() - started) / len(rows) * 1000
        index.close()
    return curve, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()}")
    converter = RdfConverter(ContextLibrary.load(None))
    rows = []
    for number in range(arguments.count):
        document = description(number)
        rows.append((document["id"], converter.convert(document).ntriples))
    megabytes = sum(len(ntriples) for _, ntriples in rows) / 2**20
    reference = _memory()
    print(f"{len(rows)} descriptions, {megabytes:.1f} MB of N-Triples; reference RSS {reference[0]} MB")
    results = [one_round(rows) for _ in range(arguments.rounds)]
    print("phase    descriptions  RSS MB (rounds)      VmSize MB (rounds)")
    for position, (phase, count, _, _) in enumerate(results[0][0]):
        rss = [curve[position][2] for curve, _ in results]
        size = [curve[position][3] for curve, _ in results]
        print(f"{phase:8} {count:12}  {rss!s:20} {size}")
    for phase in ("insert", "replace"):
        spread = [round(cpu[phase], 2) for _, cpu in results]
        print(f"CPU per description, {phase}: median {statistics.median(spread):.2f} ms, rounds {spread}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB; load {os.getloadavg()}")


if __name__ == "__main__":
    main()
