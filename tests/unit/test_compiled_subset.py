"""The compiled JSON-LD subset: what it writes for each kind of term definition and value, and the features it
leaves to the general processor (``Unsupported``), with the reason it gives."""

from __future__ import annotations

import re
from typing import Any

import pytest

from registry.semantic.compiled import Context, Unsupported, Writer

EX = "http://ex.org/"
REMOTE = {"http://ctx.example/": {"r": EX + "r"}}


def lines(local: Any, node: dict[str, Any]) -> list[str]:
    writer = Writer(REMOTE.get, lambda iri: iri)
    writer.node(Context().derive(local, REMOTE.get), node)
    return [re.sub(r"_:b[0-9a-f]{32}n", "_:n", line) for line in writer.lines]


@pytest.mark.parametrize(
    ("local", "node", "expected"),
    [
        (
            {"ex": EX, "n": {"@id": "ex:n", "@type": "http://www.w3.org/2001/XMLSchema#integer"}},
            {"@id": "ex:s", "n": [2.0, 1.5, None], "ex:b": True, "ex:d": 1e22},
            [
                '<http://ex.org/s> <http://ex.org/n> "2"^^<http://www.w3.org/2001/XMLSchema#integer> .\n',
                '<http://ex.org/s> <http://ex.org/n> "1.5E0"^^<http://www.w3.org/2001/XMLSchema#integer> .\n',
                '<http://ex.org/s> <http://ex.org/b> "true"^^<http://www.w3.org/2001/XMLSchema#boolean> .\n',
                '<http://ex.org/s> <http://ex.org/d> "1.0E22"^^<http://www.w3.org/2001/XMLSchema#double> .\n',
            ],
        ),
        (
            {"@vocab": EX, "@language": "en", "l": {"@container": "@language"}, "t": {"@language": None}},
            {"@id": "_:s", "l": {"DE": "Hallo", "@none": ["plain", None]}, "t": "untagged", "v": "tagged"},
            [
                '_:n1 <http://ex.org/l> "Hallo"@de .\n',
                '_:n1 <http://ex.org/l> "plain" .\n',
                '_:n1 <http://ex.org/t> "untagged" .\n',
                '_:n1 <http://ex.org/v> "tagged"@en .\n',
            ],
        ),
        (
            {
                "@vocab": EX,
                "name": "https://www.w3.org/2019/wot/td#name",
                "a": {"@container": "@index", "@index": "name", "@context": {"x": {"@type": "@id"}}},
                "i": {"@container": "@index", "@type": "@vocab"},
            },
            {"@id": EX + "s", "a": {"get": {"x": "rel"}}, "i": {"k": ["i", "http://o.example/"]}},  # "rel": dropped
            [
                '_:n1 <https://www.w3.org/2019/wot/td#name> "get" .\n',
                "<http://ex.org/s> <http://ex.org/a> _:n1 .\n",
                "<http://ex.org/s> <http://ex.org/i> <http://ex.org/i> .\n",
                "<http://ex.org/s> <http://ex.org/i> <http://o.example/> .\n",
            ],
        ),
        (
            [
                "http://ctx.example/",
                {"p": {"@id": "r:x", "@prefix": False}, "r": {"@id": "http://ex.org/r/", "@prefix": True}},
            ],
            {"@type": ["r:T", "dropped"], "p": "v", "_:k": "blank predicate", "unmapped": 1},
            [
                "_:n1 <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex.org/r/T> .\n",
                '_:n1 <http://ex.org/r/x> "v" .\n',
            ],
        ),
    ],
    ids=["numbers", "languages", "index-maps", "prefixes"],
)
def test_what_the_subset_writes(local: Any, node: dict[str, Any], expected: list[str]) -> None:
    assert lines(local, node) == expected


@pytest.mark.parametrize(
    ("local", "node", "reason"),
    [
        ({"a": "b:x", "b": "a:y"}, {}, "cyclic term definition a"),
        ({"a": {"@reverse": "http://ex.org/r"}}, {}, "term definition of a"),
        ({"a": {"@id": "@list"}}, {}, "a aliases @list"),
        ({"a": "rel"}, {}, "term a expands to a relative IRI"),
        ({"a": {"@type": "@json", "@id": EX}}, {}, "@type @json of a"),
        ({"a": {"@id": EX, "@type": "_:d"}}, {}, "datatype of a"),
        ({"a": {"@id": EX, "@container": ["@index", "@language"]}}, {}, "@container ['@index', '@language'] of a"),
        ({"a": {"@id": EX, "@index": "k"}}, {}, "@index of a"),
        ({"a": {"@id": EX, "@language": "not a tag"}}, {}, "@language of a"),
        ({"a": {"@id": EX, "@prefix": "yes"}}, {}, "@prefix must be a boolean"),
        ({"@language": 5}, {}, "@language must be a language tag"),
        ({"@vocab": "rel"}, {}, "relative @vocab"),
        ({"@base": EX}, {}, "context keyword @base"),
        ("http://missing.example/", {}, "context http://missing.example/ is not available offline"),
        (5, {}, "a context must be a map, a string, null or an array"),
        ({}, {"@id": ["x"]}, "@id must be one string"),
        ({}, {"@id": "rel"}, "relative @id"),
        ({}, {"@graph": []}, "keyword @graph in a node object"),
        ({}, {"@type": "@id"}, "keyword-like value @id"),
        ({}, {EX + "p": float("nan")}, "non-finite number"),
        ({"i": {"@id": EX, "@container": "@index"}}, {"i": {"@none": "x"}}, "@none index"),
        ({"i": {"@id": EX, "@container": "@index", "@index": "k"}}, {"i": {"a": "x"}}, "property-indexed value"),
        ({"l": {"@id": EX, "@container": "@language"}}, {"l": {"x y": "t"}}, "language tag 'x y'"),
        ({}, {"http://ex.org/p q": 1}, "not a plain absolute IRI: 'http://ex.org/p q'"),
    ],
)
def test_what_the_subset_leaves_to_the_general_processor(local: Any, node: dict[str, Any], reason: str) -> None:
    with pytest.raises(Unsupported) as caught:
        lines(local, node)
    assert str(caught.value).startswith(reason)
