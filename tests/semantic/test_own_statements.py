"""Which statements of a description's RDF are its own (registry/semantic/graphs.py)."""

from __future__ import annotations

import time
from typing import Any

import pyoxigraph as ox
import pytest

from registry.semantic.graphs import _LITERAL_OR_BLANK_NODE, blank_nodes_apart, own_statements, owns

ID = "https://agents.example.com/a"


@pytest.mark.parametrize(
    ("iri", "own"),
    [
        (ID, True),
        (ID + "#auth", True),
        (ID + "#", True),
        (ID + "/b", False),  # another resource, which another party may hold
        (ID + "?x=1", False),
        (ID + "b", False),
        ("https://agents.example.com/", False),
        ("urn:bob:agent1", False),
    ],
)
def test_a_description_owns_its_id_and_iris_under_it_with_a_fragment(iri: str, own: bool) -> None:
    assert owns(ID, iri) is own


def test_an_id_with_a_fragment_owns_only_itself() -> None:
    assert owns("urn:x#a", "urn:x#a")
    assert not owns("urn:x#a", "urn:x#a#b")
    assert not owns("urn:x#a", "urn:x#b")


def test_statements_about_others_and_the_blank_nodes_only_they_reach_are_left_out() -> None:
    ntriples = (
        f'<{ID}> <urn:p:title> "A" .\n'
        f"<{ID}> <urn:p:links> <urn:bob:agent1> .\n"
        f"<{ID}> <urn:p:action> _:a .\n"
        '_:a <urn:p:name> "act" .\n'
        f'<{ID}#policy> <urn:p:title> "Own" .\n'
        '<urn:bob:agent1> <urn:p:title> "Evil" .\n'
        "<urn:bob:agent1> <urn:p:action> _:b .\n"
        "_:b <urn:p:form> _:c .\n"
        "_:c <urn:p:target> <https://evil.example/steal> .\n"
        "<urn:carol> <urn:p:title> _:a .\n"
        '_:island <urn:p:note> "about nobody" .\n'
    )
    own = own_statements(ID, ntriples)
    assert own.dropped == {"urn:bob:agent1": 4, "urn:carol": 1}
    assert sorted(own.ntriples.splitlines()) == sorted(
        [
            f'<{ID}> <urn:p:title> "A" .',
            f"<{ID}> <urn:p:links> <urn:bob:agent1> .",
            f"<{ID}> <urn:p:action> _:a .",
            '_:a <urn:p:name> "act" .',
            f'<{ID}#policy> <urn:p:title> "Own" .',
            '_:island <urn:p:note> "about nobody" .',
        ]
    )


def test_own_rdf_is_returned_as_it_is() -> None:
    ntriples = f'<{ID}> <urn:p:title> "A" .\n<{ID}#x> <urn:p:q> _:a .\n_:a <urn:p:r> "<urn:bob> x" .\n'
    own = own_statements(ID, ntriples)
    assert own.ntriples is ntriples
    assert not own.dropped


def test_a_subject_that_only_starts_like_the_id_is_not_its_own() -> None:
    assert own_statements("urn:a", '<urn:ab> <urn:p> "x" .\n<urn:a> <urn:p> "y" .\n').dropped == {"urn:ab": 1}


def test_checking_large_own_rdf_costs_little() -> None:
    """Every index load checks the stored RDF again: own RDF is checked without splitting it into statements. The
    check is timed against splitting the same RDF (one foreign statement added) in the same test, so a loaded machine
    slows both alike: splitting costs about 40 times the check, and a check that split would cost as much."""
    ntriples = "".join(f'<{ID}> <urn:p:n{n}> _:b{n} .\n_:b{n} <urn:p:v> "{n}" .\n' for n in range(100_000))
    started = time.perf_counter()
    own = own_statements(ID, ntriples)
    checked = time.perf_counter() - started
    assert own.ntriples is ntriples  # handed back as it came: not split and joined again
    started = time.perf_counter()
    split = own_statements(ID, ntriples + '<urn:other> <urn:p> "x" .\n')
    splitting = time.perf_counter() - started
    assert split.dropped == {"urn:other": 1}
    assert checked < splitting / 5, f"checking took {checked:.3f} s, splitting {splitting:.3f} s"


@pytest.mark.parametrize(
    "ntriples",
    [
        '<urn:a> <urn:p> _:b1 .\n_:b1 <urn:q> _:b2 .\n_:b2 <urn:r> "v"@en .\n',  # labels only where labels go
        '_:x <urn:p> "1" .',  # no final newline
        '<urn:a> <urn:p> "a literal > _:x with a label in it" .\n_:x <urn:q> <urn:a> .\n',
        '<urn:a> <urn:p> "_:x" .\n',
        "<urn:a> <urn:p> <urn:iri_:x> .\n<urn:a> <urn:q> _:x .\n",
        '<urn:a> <urn:p> "escaped \\" > _:x" .\n',
        "<urn:a> <urn:p> <urn:b> .\n",
        "",
    ],
)
def test_blank_nodes_apart_prefixes_labels_and_nothing_else(ntriples: str) -> None:
    """Plain replacements when every ``_:`` is a label; stepping over each IRI and literal otherwise: the same
    text either way."""
    stepped = _LITERAL_OR_BLANK_NODE.sub(lambda match: match.group(1) or f"_:d1x{match.group(2)}", ntriples)
    assert blank_nodes_apart(ntriples, "d1x") == stepped
    renamed = [quad.triple for quad in ox.parse(blank_nodes_apart(ntriples, "d1x"), ox.RdfFormat.N_TRIPLES)]
    original = [quad.triple for quad in ox.parse(ntriples, ox.RdfFormat.N_TRIPLES)]
    assert renamed == [ox.Triple(*(_prefixed(term) for term in triple)) for triple in original]


def _prefixed(term: Any) -> Any:
    return ox.BlankNode("d1x" + term.value) if isinstance(term, ox.BlankNode) else term
