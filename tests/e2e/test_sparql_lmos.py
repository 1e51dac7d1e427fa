"""SPARQL over LMOS descriptions without traps: every namespace spelling answers alike (with a notice), capability
versions are queryable, two vendors' capabilities with one id stay apart, unknown prefixes are named."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from tests.support.things import thing

TOKEN = uuid.uuid4().hex[:8]
CAPABILITY = f"urn:{TOKEN}:cap:weather:forecast"
TD_JSON = {"content-type": "application/td+json"}


def agent(vendor: str, version: str, spelling: str) -> dict[str, Any]:
    document = thing(
        f"{vendor} weather {TOKEN}",
        **{
            "@type": "lmos:Agent",
            "lmos:metadata": {"lmos:vendor": {"lmos:name": vendor}},
            "lmos:capabilities": [{"id": CAPABILITY, "name": "forecast", "version": version}],
        },
    )
    document["@context"] = [document["@context"][0], {"lmos": spelling}]
    return document


@pytest.fixture(scope="module")
def agents(base_url: str) -> dict[str, str]:
    registered = {}
    with httpx.Client(base_url=base_url, timeout=30) as client:
        for vendor, version, spelling in [
            ("Acme", "1.2.0", "https://eclipse.dev/lmos/protocol/v1"),
            ("Globex", "2.0.0", "https://eclipse.dev/lmos/protocol/v1/"),
        ]:
            document = agent(vendor, version, spelling)
            response = client.put(f"/things/{document['id']}", json=document, headers=TD_JSON)
            assert response.status_code == 201, response.text
            registered[vendor] = document["id"]
    return registered


QUERY = """
SELECT ?vendor ?version WHERE {{
  ?agent a lmos:Agent ; lmos:metadata/lmos:vendor/lmos:name ?vendor ; lmos:capabilities ?capability .
  ?capability lmos:id "{capability}" ; lmos:version ?version .
}} ORDER BY ?vendor
"""


def ask(client: httpx.Client, query: str) -> httpx.Response:
    return client.get("/search/sparql", params={"query": query})


def rows(response: httpx.Response) -> list[tuple[str, ...]]:
    assert response.status_code == 200, response.text
    bindings = response.json()["results"]["bindings"]
    return [tuple(row[name]["value"] for name in sorted(row)) for row in bindings]


@pytest.mark.parametrize(
    "prefix",
    [
        None,
        "https://eclipse.dev/lmos/protocol/v1#",
        "https://eclipse.dev/lmos/protocol/v1",
        "https://eclipse.dev/lmos/protocol/v1/",
    ],
)
def test_every_spelling_answers_alike_with_versions_apart(
    client: httpx.Client, agents: dict[str, str], prefix: str | None
) -> None:
    query = QUERY.format(capability=CAPABILITY)
    if prefix is not None:
        query = f"PREFIX lmos: <{prefix}>\n{query}"
    response = ask(client, query)
    # Two vendors offer the same capability id: each sees only its own version.
    assert rows(response) == [("Acme", "1.2.0"), ("Globex", "2.0.0")]
    notices = json.loads(response.headers.get("registry-notices", "[]"))
    rewritten = prefix is not None and not prefix.endswith("#")
    assert [notice["code"] for notice in notices] == (["lmos-namespace-rewritten"] if rewritten else [])


def test_full_iris_with_a_slash_are_rewritten(client: httpx.Client, agents: dict[str, str]) -> None:
    query = (
        "SELECT ?version WHERE { ?c <https://eclipse.dev/lmos/protocol/v1/id> "
        f'"{CAPABILITY}" ; <https://eclipse.dev/lmos/protocol/v1/version> ?version }} ORDER BY ?version'
    )
    assert rows(ask(client, query)) == [("1.2.0",), ("2.0.0",)]


def test_an_unknown_prefix_is_named_with_the_prebound_ones(client: httpx.Client) -> None:
    response = ask(client, "SELECT ?s WHERE { ?s schema:name ?n }")
    assert response.status_code == 400
    problem = response.json()
    assert "'schema'" in problem["detail"]
    assert "lmos: <https://eclipse.dev/lmos/protocol/v1#>" in problem["detail"]
    assert problem["prefix"] == "schema"
    assert "td" in problem["prebound"]
    declared = ask(client, "PREFIX schema: <https://schema.org/> SELECT ?s WHERE { ?s schema:name ?n } LIMIT 1")
    assert declared.status_code == 200, declared.text
