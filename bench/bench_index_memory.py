"""Memory and CPU of the SPARQL index while a bulk load is applied to it, as the worker's follower applies it.

In process (default): converts generated agents and tools (bench/catalogue.py) to N-Triples once, then, in a
fresh on-disk index, applies them in batches of 500 (what the follower does with the changes of ``registry
import``), then puts every one back (the replace path), reading the process's resident memory (VmRSS) and address
space (VmSize, what ``REGISTRY_SPARQL_MEMORY_LIMIT`` caps) after each batch and the CPU per description. The
reference is the same process before the index is opened.

    python bench/bench_index_memory.py [--count 5000] [--rounds 3]

With ``--import``: the real thing, ``registry serve`` on a fresh database and ``registry import`` of the generated
descriptions (batches), sampling the SPARQL worker's RSS and VmSize every second until it has indexed them all,
and its CPU per description.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.catalogue import description
from bench.rounds import add_logging_option, machine, served, use_logging_option
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter
from registry.sparql.worker.index import RdfIndex
from tests.support.servers import LOCAL_POSTGRES, ServerProcess, fresh_database

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


_COUNT_GRAPHS = "SELECT (COUNT(DISTINCT ?g) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"


def import_round(count: int) -> None:
    """``registry import`` of ``count`` descriptions into a fresh directory; the worker's memory every second."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-import-") as directory,
        fresh_database(LOCAL_POSTGRES) as url,
        ServerProcess(url, served()) as server,
    ):
        files = Path(directory)
        for number in range(count):
            (files / f"{number}.json").write_text(json.dumps(description(number)))
        http = httpx.Client(base_url=server.base_url, timeout=600)
        while http.get("/readyz").status_code != 200:
            time.sleep(0.3)
        assert server.process is not None
        worker = next(
            child
            for child in psutil.Process(server.process.pid).children()
            if "registry.sparql.worker" in " ".join(child.cmdline())
        )
        samples: list[tuple[int, int]] = []
        done = threading.Event()

        def sample() -> None:
            while not done.wait(1 if samples else 0):
                memory = worker.memory_info()
                samples.append((memory.rss >> 20, memory.vms >> 20))

        sampler = threading.Thread(target=sample)
        sampler.start()
        cpu = sum(worker.cpu_times()[:2])
        command = [str(Path(sys.executable).with_name("registry")), "--url", server.base_url, "import", str(files)]
        subprocess.run(command, check=True, capture_output=True)
        http.get("/search/sparql", params={"query": _COUNT_GRAPHS})  # answered once every change is applied
        done.set()
        sampler.join()
        cpu = sum(worker.cpu_times()[:2]) - cpu
    print(f"worker CPU {cpu / count * 1000:.2f} ms per description; RSS MB every second: {[s[0] for s in samples]}")
    print(f"peak RSS {max(s[0] for s in samples)} MB, peak VmSize {max(s[1] for s in samples)} MB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--import", dest="through_import", action="store_true")
    add_logging_option(parser)
    arguments = parser.parse_args()
    print(use_logging_option(arguments))
    print(machine())
    if arguments.through_import:
        for _ in range(arguments.rounds):
            import_round(arguments.count)
        print(f"load average: {os.getloadavg()}")
        return
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
