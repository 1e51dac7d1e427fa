"""CPU per description of a write's steps outside PostgreSQL, in two source trees: the candidate
(``DirectoryService._candidate``: validation, lifetime, projections), the catalog row's search texts and the
version policy's two calls, on descriptions of the catalogue (bench/catalogue.py).

Each tree runs in an interpreter of its own; chunks of ``--chunk`` descriptions go to each in turn, which goes
first alternating, so that both see the same load; prints the process CPU per description of each and the ratio
per chunk (the figure that holds still on a shared host).

    python bench/bench_candidates.py --reference DIR [--chunks 30] [--chunk 100]

``--reference`` is a source tree of the other version (``git archive <commit> | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TREE = Path(__file__).resolve().parents[1]


def serve_chunks(tree: Path) -> None:
    """The worker: reads ``offset count`` lines, answers the process CPU µs per description of each chunk."""
    sys.path.insert(0, str(tree))
    import msgspec

    from bench.catalogue import description
    from registry.descriptions.registration_info import LifetimePolicy
    from registry.directory.service import DirectoryService
    from registry.directory.version_policy import VersionPolicy
    from registry.projections import Projections
    from registry.projections.catalog import CatalogProjection, CatalogProjector
    from registry.projections.rdf import RdfProjector
    from registry.semantic.loader import ContextLibrary
    from registry.semantic.rdf import RdfConverter, read_with

    converter = RdfConverter(ContextLibrary.load())
    read_with(converter)
    service = DirectoryService.__new__(DirectoryService)
    service.projections = Projections([RdfProjector(converter, strict_contexts=False), CatalogProjector()])
    service.policy = LifetimePolicy(max_ttl=None, mandate_ttl=False)
    policy = VersionPolicy("warn")
    takes_version = "version" in inspect.signature(policy.check).parameters

    async def chunk(offset: int, count: int) -> float:
        documents = [msgspec.json.decode(json.dumps(description(offset + n))) for n in range(count)]
        started = time.process_time()
        for document in documents:
            candidate = await service._candidate(document["id"], document)
            for projection in candidate.projections:
                if isinstance(projection, CatalogProjection):
                    projection.summary.search_texts()
            text = candidate.document_text
            if takes_version:
                policy.compared_with(candidate.version, [])
                policy.check(document["id"], None, candidate.document, text, [], {}, version=candidate.version)
            else:
                checks: Any = policy
                checks.compared_with(candidate.document, [])
                checks.check(document["id"], None, candidate.document, text, [], {})
        return (time.process_time() - started) / count * 1e6

    asyncio.run(chunk(0, 50))
    print("ready", flush=True)
    for line in sys.stdin:
        offset, count = map(int, line.split())
        print(f"{asyncio.run(chunk(offset, count)):.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path)
    parser.add_argument("--chunks", type=int, default=30)
    parser.add_argument("--chunk", type=int, default=100)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve_chunks(args.serve)
        return
    trees = [args.reference.resolve(), TREE]
    workers = [
        subprocess.Popen(
            [sys.executable, __file__, "--serve", str(tree)],
            cwd=tree,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tree in trees
    ]
    for worker in workers:
        assert worker.stdin is not None
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
    spent: list[list[float]] = [[], []]
    for number in range(args.chunks):
        for index in (0, 1) if number % 2 == 0 else (1, 0):
            stdin, stdout = workers[index].stdin, workers[index].stdout
            assert stdin is not None
            assert stdout is not None
            stdin.write(f"{number * args.chunk} {args.chunk}\n")
            stdin.flush()
            spent[index].append(float(stdout.readline()))
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.close()
        worker.wait()
    for label, values in zip(("reference", "this"), spent, strict=True):
        print(f"{label}: median {statistics.median(values):,.1f} µs per description, min {min(values):,.1f}")
    ratios = [new / old for old, new in zip(*spent, strict=True)]
    quartiles = ", ".join(f"{value:.2f}" for value in statistics.quantiles(ratios, n=4))
    print(f"this/reference per chunk: median {statistics.median(ratios):.2f} (quartiles {quartiles})")


if __name__ == "__main__":
    main()
