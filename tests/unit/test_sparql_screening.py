"""Screening a SPARQL query before it runs: what is refused (and which refusal comes first), the dataset it names,
and the prefixes it may use."""

from __future__ import annotations

import pytest

from registry.errors import BadRequest
from registry.semantic.prefixes import check_prefixes
from registry.sparql.query import MAX_NESTING, query_dataset, screen


def refusal(query: str, allowlist: tuple[str, ...] = ()) -> str:
    with pytest.raises(BadRequest) as caught:
        screen(query, allowlist)
    return caught.value.detail


def test_the_first_refusal_in_the_query_is_the_one_reported() -> None:
    deep = "{" * (MAX_NESTING + 1) + "}" * (MAX_NESTING + 1)
    assert refusal(f"INSERT DATA {deep}").startswith("This SPARQL endpoint is read-only: INSERT")
    assert refusal(f"SELECT * WHERE {deep} DELETE").startswith("The query nests brackets more than")
    assert refusal("SELECT * WHERE { SERVICE <urn:s> {} } LOAD <urn:x>") == (
        "SERVICE (federated query) is disabled on this directory"
    )
    assert refusal("SELECT * WHERE { SERVICE SILENT ?e {} }", ("urn:s",)) == (
        "SERVICE may only call the allow-listed endpoints (urn:s), given a variable or prefixed name"
    )
    assert refusal("x" * 100_001) == "The query is longer than 100000 characters"


def test_nesting_at_the_limit_passes() -> None:
    assert not screen("SELECT * WHERE " + "{" * MAX_NESTING + "}" * MAX_NESTING).names_dataset


def test_screening_learns_the_dataset_and_federation() -> None:
    screened = screen(
        "BASE <http://g.example/> PREFIX g: <sub/> SELECT * FROM <a> FROM g:b FROM NAMED <c> FROM NAMED g:d "
        "FROM NAMED unknown:e WHERE { SERVICE SILENT <urn:s> { ?s ?p ?o } }",
        ("urn:s",),
    )
    assert screened.names_dataset
    assert screened.federated
    assert screened.default_graphs == ("http://g.example/a", "http://g.example/sub/b")
    assert screened.named_graphs == ("http://g.example/c", "http://g.example/sub/d")
    assert query_dataset("SELECT * \\u0046ROM td:x WHERE {}") == (["https://www.w3.org/2019/wot/td#x"], [])
    assert query_dataset("SELECT * WHERE { ?s ?p 'FROM <urn:g>' }") is None
    assert query_dataset("SELECT * WHERE {} FROM") == ([], [])


def undeclared(query: str) -> BadRequest:
    with pytest.raises(BadRequest) as caught:
        check_prefixes(query)
    return caught.value


def test_an_undeclared_prefix_is_named_first_in_query_order() -> None:
    error = undeclared("SELECT ?s WHERE { ?s schema:name ?n ; foaf:knows ?o }")
    assert error.detail.startswith("The query uses the prefix 'schema' (schema:name) without declaring it; add ")
    assert error.extra["prefix"] == "schema"
    assert error.extra["invalidParams"] == [{"name": "query", "reason": "undeclared prefix 'schema'"}]
    assert "td" in error.extra["prebound"]


@pytest.mark.parametrize(
    "query",
    [
        "PREFIX schema: <https://schema.org/> SELECT ?s WHERE { ?s schema:name ?n }",
        "prefix schema: <https://schema.org/> SELECT ?s WHERE { ?s schema:name 'x:y' } # foaf:knows",
        "SELECT ?s WHERE { ?s td:title ?t . _:b td:name ?x . ?s <urn:a:b> ?v }",
        "SELECT ?x:y WHERE { ?s ?p $o:z }",
    ],
)
def test_declared_prebound_and_non_prefix_names_pass(query: str) -> None:
    check_prefixes(query)


def test_a_prefix_keyword_at_the_end_declares_nothing() -> None:
    assert undeclared("SELECT * WHERE { ?s ex:p ?o } PREFIX").extra["prefix"] == "ex"
