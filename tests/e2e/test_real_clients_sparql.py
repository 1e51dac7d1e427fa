"""SPARQL clients of the Python ecosystem against a live server: ASK answered in every results format that
SPARQL 1.1 defines for it (JSON, XML), and refused with 406 for CSV and TSV, which it defines for SELECT only
(before, rdflib parsed a CSV "true" as a one-row SELECT result and SPARQLWrapper handed back an out-of-spec body)."""

from __future__ import annotations

import urllib.error
import warnings
from typing import Any

import httpx
import pytest
import rdflib
from rdflib.plugins.stores.sparqlstore import SPARQLStore
from SPARQLWrapper import CSV, JSON, TSV, XML, SPARQLWrapper

from tests.support.servers import ServerProcess
from tests.support.things import thing

ASK = "ASK { ?s ?p ?o }"


def wrapper(server: ServerProcess, return_format: str) -> SPARQLWrapper:
    sparql = SPARQLWrapper(server.base_url + "/search/sparql")
    sparql.setQuery(ASK)
    sparql.setReturnFormat(return_format)
    return sparql


@pytest.fixture(scope="module")
def registered(server: ServerProcess) -> None:
    """At least one description, so that the ASK is true."""
    document = thing("ASK target")
    assert httpx.put(f"{server.base_url}/things/{document['id']}", json=document).status_code == 201


def test_sparqlwrapper_ask_in_json_and_xml(server: ServerProcess, registered: None) -> None:
    assert wrapper(server, JSON).query().convert()["boolean"] is True  # type: ignore[index, call-overload]
    document: Any = wrapper(server, XML).query().convert()
    assert document.getElementsByTagName("boolean")[0].firstChild.data == "true"


@pytest.mark.parametrize("return_format", [CSV, TSV])
def test_sparqlwrapper_ask_in_csv_or_tsv_is_not_acceptable(
    server: ServerProcess, registered: None, return_format: str
) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        wrapper(server, return_format).query()
    assert refused.value.code == 406
    body = refused.value.read().decode()
    refused.value.close()
    assert "application/sparql-results+json" in body
    assert "application/sparql-results+xml" in body


@pytest.mark.parametrize("return_format", ["json", "xml"])
def test_rdflib_sparql_store_asks_in_json_and_xml(server: ServerProcess, registered: None, return_format: str) -> None:
    store = SPARQLStore(server.base_url + "/search/sparql", returnFormat=return_format)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        answer = rdflib.Graph(store=store).query(ASK)
    assert answer.askAnswer is True


@pytest.mark.parametrize("return_format", ["csv", "tsv"])
def test_rdflib_sparql_store_ask_in_csv_or_tsv_is_refused_not_misread(
    server: ServerProcess, registered: None, return_format: str
) -> None:
    """rdflib reports any failed request as a ValueError; the HTTP error it wraps is the 406."""
    graph = rdflib.Graph(store=SPARQLStore(server.base_url + "/search/sparql", returnFormat=return_format))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ValueError, match="You did something wrong") as refused:
            graph.query(ASK)
    http_error = refused.value.__context__
    assert isinstance(http_error, urllib.error.HTTPError)
    http_error.close()
    assert http_error.code == 406
