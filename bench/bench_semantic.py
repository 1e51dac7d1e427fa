"""Semantic layer figures: JSON-LD to RDF per description, SPARQL index rebuild, capability query, memory.

    python bench/bench_semantic.py --n 10000 [--rdflib-n 1000]

The corpus is the seed WeatherAgent converted once and varied in its N-Triples (id, vendor, blank nodes, the name
of one input property), so building it does not dominate the run. rdflib is measured on --rdflib-n descriptions
as the reference the engine was chosen against.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

import pyoxigraph as ox

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from registry.semantic.graphs import graph_name, quads_in, registration_triples
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter
from registry.sparql.query import PREFIXES, SparqlEngine
from registry.sparql.worker.index import RdfIndex

SEED = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "weather-agent.td.json"
CAPABILITY = (
    "SELECT ?agent WHERE { ?agent a lmos:Agent ; lmos:metadata/lmos:vendor/lmos:name 'Vendor 10' ; "
    "td:hasActionAffordance/td:hasInputSchema/jsonschema:properties/jsonschema:propertyName 'question' }"
)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed(function, repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def corpus(n: int) -> list[tuple[str, str]]:
    document = json.loads(SEED.read_text())
    base = RdfConverter(ContextLibrary.load()).convert(document).ntriples
    now = dt.datetime.now(dt.UTC)
    rows = []
    for number in range(n):
        thing_id = f"urn:uuid:bench-{number:08d}"
        text = base.replace(document["id"], thing_id).replace("_:", f"_:d{number}x")
        text = text.replace("Deutsche Telekom AG", f"Vendor {number % 20}")
        if number % 10:
            text = text.replace('"question"', f'"question{number % 7}"')
        rows.append((thing_id, text + registration_triples(thing_id, now, now, None, None)))
    return rows


def over_union(store: ox.Store) -> ox.QuerySolutions:
    """The capability query as the engine runs it on the index: over the union of the descriptions' graphs."""
    return cast(ox.QuerySolutions, store.query(CAPABILITY, prefixes=PREFIXES, use_default_graph_as_union=True))


def union_against_copy(index: ox.Store, rows: list[tuple[str, str]], rounds: int = 3, repeat: int = 30) -> None:
    """The capability query over the engine's union against a real default graph holding a copy of every
    description (the index's layout 1, the reference), in interleaved rounds."""
    copied = ox.Store(tempfile.mkdtemp(prefix="bench-sparql-copied-"))
    for start in range(0, len(rows), 500):
        batch = [text + quads_in(graph_name(thing_id), text) for thing_id, text in rows[start : start + 500]]
        copied.bulk_load("\n".join(batch).encode(), ox.RdfFormat.N_QUADS)
    union, default = [], []
    for _ in range(rounds):
        union.append(statistics.median(timed(lambda: list(over_union(index)), repeat)))
        default.append(statistics.median(timed(lambda: list(copied.query(CAPABILITY, prefixes=PREFIXES)), repeat)))
    ratios = [mine / reference for mine, reference in zip(union, default, strict=True)]
    print(
        f"capability query over the union: p50 {min(union):.2f}-{max(union):.2f} ms against "
        f"{min(default):.2f}-{max(default):.2f} ms over a copy in the default graph ({rounds} rounds): "
        f"{min(ratios):.2f}-{max(ratios):.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--rdflib-n", type=int, default=1000)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}  descriptions: {args.n}")

    document = json.loads(SEED.read_text())
    converter = RdfConverter(ContextLibrary.load())
    converter.convert(document)
    convert = timed(lambda: converter.convert(document), 200)
    print(f"JSON-LD -> RDF (compiled contexts, as stored): p50 {statistics.median(convert):.2f} ms/doc")
    general = timed(lambda: converter.convert_general(document), 50)
    print(f"JSON-LD -> RDF (oxigraph's parser, contexts inlined): p50 {statistics.median(general):.2f} ms/doc")
    from pyld import jsonld

    options = {"format": "application/n-quads", "documentLoader": converter.library.pyld_loader()}
    pyld = timed(lambda: jsonld.to_rdf(document, options), 20)
    print(f"JSON-LD -> RDF (pyld 3.3, same loader, no names): p50 {statistics.median(pyld):.2f} ms/doc")

    rows = corpus(args.n)
    gc.collect()
    before = rss_mb()
    index = RdfIndex(Path(tempfile.mkdtemp(prefix="bench-sparql-index-")))
    started = time.perf_counter()
    for start in range(0, len(rows), 500):  # as the worker builds it: batches of 500
        index.load(rows[start : start + 500])
    rebuild = time.perf_counter() - started
    print(f"index build (on-disk oxigraph, {args.n} graphs, {len(index)} quads): {rebuild:.2f} s")
    print(f"memory while building the index: {rss_mb() - before:.0f} MB RSS per {args.n} descriptions")
    updates = timed(lambda: index.replace(rows[:1]), 200)
    print(f"replacing one description in the index (atomic update): p50 {statistics.median(updates):.2f} ms")
    query = timed(lambda: list(over_union(index.store)), 50)
    found = len(list(over_union(index.store)))
    print(
        f"capability query (oxigraph, over the union of the graphs): p50 {statistics.median(query):.2f} ms, "
        f"p95 {sorted(query)[int(len(query) * 0.95) - 1]:.2f} ms, {found} agents"
    )
    union_against_copy(index.store, rows)
    engine = SparqlEngine(index.store, timeout=10, max_results=100_000, service_allowlist=())
    loop = asyncio.new_event_loop()
    answered = timed(lambda: loop.run_until_complete(engine.run(CAPABILITY, "application/json")), 50)
    engine.close()
    loop.close()
    print(f"capability query as the endpoint runs it (screen, thread, JSON): p50 {statistics.median(answered):.2f} ms")
    import rdflib

    small = rows[: args.rdflib_n]
    gc.collect()
    before = rss_mb()
    started = time.perf_counter()
    dataset = rdflib.Dataset(default_union=True)
    for thing_id, text in small:
        dataset.graph(rdflib.URIRef(thing_id)).parse(data=text, format="nt")
    load = time.perf_counter() - started
    memory = rss_mb() - before
    prologue = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in PREFIXES.items())
    rdflib_query = timed(lambda: list(dataset.query(prologue + CAPABILITY)), 5)
    print(
        f"rdflib on {args.rdflib_n}: load {load:.2f} s, {memory:.0f} MB RSS, "
        f"capability query p50 {statistics.median(rdflib_query):.1f} ms"
    )


if __name__ == "__main__":
    main()
