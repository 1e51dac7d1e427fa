"""SPARQL search (WoT Discovery §7.3.2.3): SPARQL 1.1 Protocol over the registered TDs' RDF."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.conformance.conftest import assert_problem, create, media_type, mock_td, new_id

TITLE = "https://www.w3.org/2019/wot/td#title"


@pytest.fixture
def searchable(client: httpx.Client) -> tuple[str, str]:
    """A TD with a unique title, once the SPARQL index has caught up with it (it follows writes)."""
    title = f"sparql-{new_id('')}"
    td = mock_td(new_id(), title=title)
    create(client, td)
    query = f'SELECT ?s WHERE {{ ?s <{TITLE}> "{title}"@en }}'
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if select(client, query):
            return td["id"], title
        time.sleep(0.1)
    pytest.fail("the SPARQL index did not show a registered TD within 15 s")


def select(client: httpx.Client, query: str) -> list[dict[str, Any]]:
    response = client.get("/search/sparql", params={"query": query})
    assert response.status_code == 200, response.text
    bindings: list[dict[str, Any]] = response.json()["results"]["bindings"]
    return bindings


def test_tdd_search_sparql(client: httpx.Client, searchable: tuple[str, str]) -> None:
    thing_id, title = searchable
    rows = select(client, f'SELECT ?s WHERE {{ ?s <{TITLE}> "{title}"@en }}')
    assert [row["s"]["value"] for row in rows] == [thing_id]


def test_tdd_search_sparql_version(client: httpx.Client, searchable: tuple[str, str]) -> None:
    """SPARQL 1.1: aggregates, property paths, BIND, FILTER functions."""
    thing_id, title = searchable
    query = (
        f"SELECT (COUNT(DISTINCT ?s) AS ?n) (SAMPLE(?id) AS ?found) WHERE {{ ?s <{TITLE}>/^<{TITLE}> ?s . "
        f'?s <{TITLE}> ?t . FILTER(STRSTARTS(STR(?t), "{title}")) BIND(STR(?s) AS ?id) }}'
    )
    (row,) = select(client, query)
    assert row["n"]["value"] == "1"
    assert row["found"]["value"] == thing_id


def test_tdd_search_sparql_method_get(client: httpx.Client, searchable: tuple[str, str]) -> None:
    response = client.get("/search/sparql", params={"query": "ASK { ?s ?p ?o }"})
    assert response.status_code == 200
    assert response.json()["boolean"] is True
    assert client.head("/search/sparql", params={"query": "ASK { ?s ?p ?o }"}).status_code == 200


def test_tdd_search_sparql_method_post(client: httpx.Client, searchable: tuple[str, str]) -> None:
    thing_id, title = searchable
    query = f'SELECT ?s WHERE {{ ?s <{TITLE}> "{title}"@en }}'
    direct = client.post("/search/sparql", content=query, headers={"content-type": "application/sparql-query"})
    form = client.post("/search/sparql", data={"query": query})
    for response in (direct, form):
        assert response.status_code == 200, response.text
        assert [row["s"]["value"] for row in response.json()["results"]["bindings"]] == [thing_id]


def test_tdd_search_sparql_resp_select_ask(client: httpx.Client, searchable: tuple[str, str]) -> None:
    for query in ("SELECT ?s WHERE { ?s ?p ?o } LIMIT 1", "ASK { ?s ?p ?o }"):
        response = client.get("/search/sparql", params={"query": query})
        assert response.status_code == 200
        assert media_type(response) == "application/json"


def test_tdd_search_sparql_resp_describe_construct(client: httpx.Client, searchable: tuple[str, str]) -> None:
    thing_id, _ = searchable
    for query in (f"DESCRIBE <{thing_id}>", f"CONSTRUCT {{ <{thing_id}> ?p ?o }} WHERE {{ <{thing_id}> ?p ?o }}"):
        response = client.get("/search/sparql", params={"query": query})
        assert response.status_code == 200, response.text
        assert media_type(response) == "application/ld+json"
        assert any(node.get("@id") == thing_id for node in response.json())


def test_tdd_search_sparql_error(client: httpx.Client) -> None:
    """Anything but SELECT, ASK, CONSTRUCT or DESCRIBE is a 400: updates, syntax errors, no query at all."""
    for query in ("INSERT DATA { <urn:a> <urn:b> <urn:c> }", "DROP ALL", "SELECT WHERE {", ""):
        assert_problem(client.get("/search/sparql", params={"query": query}), 400)
    assert_problem(client.get("/search/sparql"), 400)
