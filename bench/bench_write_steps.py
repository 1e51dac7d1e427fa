"""Microseconds per description of the text steps of a write, each against the way it was done before, in
interleaved rounds on descriptions of the catalogue (bench/catalogue.py):

- the SPARQL worker's bulk load: keeping blank nodes apart (every label prefixed by stepping over each IRI and
  literal, against ``DistinctBlankNodes``); N-Triples as N-Quads by the regular expression ``quads_in`` uses
  against a plain replacement after counting the lines (tried, and slower: ``quads_in`` keeps the expression);
- the server's RDF projection: the registration triples (oxigraph terms serialised, against text) and the lines
  with an LMOS IRI (every line split off, against ``_lines_with``).

    python bench/bench_write_steps.py [--descriptions 200] [--rounds 7]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyoxigraph as ox

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.catalogue import description
from bench.rounds import alternated, machine
from registry.semantic import graphs
from registry.semantic.graphs import DistinctBlankNodes, graph_name, quads_in, registration_triples
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import LMOS_IRI, RdfConverter, _lines_with


def stepped_apart(texts: list[str]) -> None:
    """Before: every label of every description prefixed, each IRI and literal stepped over by a Python call."""
    for number, text in enumerate(texts):
        prefix = f"d{number}x"
        graphs._LITERAL_OR_BLANK_NODE.sub(lambda match, p=prefix: match.group(1) or f"_:{p}{match.group(2)}", text)


def kept_apart(texts: list[str]) -> None:
    apart = DistinctBlankNodes()
    for text in texts:
        apart.of(text)


def quads_by_pattern(texts: list[str]) -> None:
    for number, text in enumerate(texts):
        graphs._STATEMENT_END.sub(f"{graph_name(f'urn:g:{number}')} .", text)


def quads_replaced(texts: list[str]) -> None:
    for number, text in enumerate(texts):
        graph = graph_name(f"urn:g:{number}")
        if text.endswith(" .\n") and text.count("\n") == text.count(" .\n"):
            text.replace(" .\n", f" {graph} .\n")
        else:
            quads_in(graph, text)


def _datetime_term(moment: dt.datetime) -> ox.Literal:
    return ox.Literal(
        moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"),
        datatype=ox.NamedNode(graphs.XSD + "dateTime"),
    )


def registration_as_terms(ids: list[str]) -> None:
    """Before: the registration information built as oxigraph terms and serialised."""
    now = dt.datetime.now(dt.UTC)
    for thing_id in ids:
        thing, info = ox.NamedNode(thing_id), ox.BlankNode()
        triples = [
            ox.Triple(thing, ox.NamedNode(graphs.DISCOVERY + "hasRegistrationInformation"), info),
            ox.Triple(info, ox.NamedNode(graphs.RDF_TYPE), ox.NamedNode(graphs.DISCOVERY + "RegistrationInformation")),
            ox.Triple(info, ox.NamedNode(graphs.DISCOVERY + "dateCreated"), _datetime_term(now)),
            ox.Triple(info, ox.NamedNode(graphs.DISCOVERY + "dateModified"), _datetime_term(now)),
        ]
        (ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES) or b"").decode()


def registration_as_text(ids: list[str]) -> None:
    now = dt.datetime.now(dt.UTC)
    for thing_id in ids:
        registration_triples(thing_id, now, now, None, None)


def lines_split(texts: list[str]) -> None:
    for text in texts:
        "".join(line + "\n" for line in text.splitlines() if LMOS_IRI in line)


def lines_found(texts: list[str]) -> None:
    for text in texts:
        _lines_with(text, LMOS_IRI)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--descriptions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    converter = RdfConverter(ContextLibrary.load())
    documents = [description(number) for number in range(args.descriptions)]
    now = dt.datetime.now(dt.UTC)
    texts = [
        converter.convert(document).ntriples + registration_triples(document["id"], now, now, None, None)
        for document in documents
    ]
    ids = [document["id"] for document in documents]
    print(f"{machine()}; {len(texts)} descriptions, {statistics.mean(map(len, texts)):,.0f} characters of RDF each")
    steps: dict[str, tuple[tuple[Callable[[Any], None], Callable[[Any], None]], list[Any]]] = {
        "worker: blank nodes apart": ((stepped_apart, kept_apart), texts),
        "worker: N-Triples as N-Quads": ((quads_by_pattern, quads_replaced), texts),
        "server: registration triples": ((registration_as_terms, registration_as_text), ids),
        "server: lines with an LMOS IRI": ((lines_split, lines_found), texts),
    }
    for step, ((before, after), inputs) in steps.items():
        timings: dict[str, list[float]] = {"before": [], "after": []}
        for round_number in range(args.rounds):
            for way, function in alternated([("before", before), ("after", after)], round_number):
                started = time.perf_counter()
                function(inputs)
                timings[way].append(1e6 * (time.perf_counter() - started) / len(inputs))
        ratios = [a / b for a, b in zip(timings["after"], timings["before"], strict=True)]
        shown = ", ".join(
            f"{way} {min(values):.1f}-{max(values):.1f} µs (median {statistics.median(values):.1f})"
            for way, values in timings.items()
        )
        spread = f"{min(ratios):.2f}-{max(ratios):.2f} (median {statistics.median(ratios):.2f})"
        print(f"{step}: {shown}; after/before {spread}")


if __name__ == "__main__":
    main()
