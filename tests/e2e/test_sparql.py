"""/search/*: the SPARQL 1.1 Protocol, third-party clients, replicas in step, hostile input."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import rdflib
from SPARQLWrapper import JSON, SPARQLWrapper

from tests.support.servers import ServerProcess, sparql_workers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TD_JSON = {"content-type": "application/td+json"}
# Scoped to the weather agent's graph: the session's database holds every other test's agents too, and a
# query over all of them could pass the result cap (REGISTRY_SPARQL_MAX_RESULTS).
AGENT_QUERY = (
    "SELECT ?n WHERE { GRAPH <urn:test:sparql-weather> { ?a a lmos:Agent ; td:hasActionAffordance/td:name ?n } }"
)


def weather(thing_id: str | None = None) -> dict[str, Any]:
    document = json.loads((FIXTURES / "weather-agent.td.json").read_text())
    if thing_id:
        document["id"] = thing_id
    return document


def names(client: httpx.Client, thing_id: str) -> list[str]:
    query = f"SELECT ?n WHERE {{ GRAPH <{thing_id}> {{ ?a td:hasActionAffordance/td:name ?n }} }}"
    response = client.get("/search/sparql", params={"query": query})
    assert response.status_code == 200, response.text
    return [row["n"]["value"] for row in response.json()["results"]["bindings"]]


@pytest.fixture
def registered(client: httpx.Client) -> str:
    document = weather("urn:test:sparql-weather")
    assert client.put(f"/things/{document['id']}", json=document, headers=TD_JSON).status_code in (201, 204)
    return document["id"]


@pytest.fixture
def start_alone(
    own_database_url: str, start_server: Callable[..., ServerProcess]
) -> Callable[[dict[str, str]], ServerProcess]:
    """A server on a database of its own holding only the weather agent: its index is built from that alone,
    so timings and memory limits do not depend on what the rest of the session registered."""

    def start(env: dict[str, str]) -> ServerProcess:
        server = start_server(env, database=own_database_url)
        document = weather("urn:test:sparql-weather")
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            assert http.put(f"/things/{document['id']}", json=document, headers=TD_JSON).status_code == 201
        return server

    return start


def test_get_form_decoded_and_visible_at_once(client: httpx.Client, registered: str) -> None:
    query = AGENT_QUERY.replace(" ", "+").replace("?", "%3F").replace("{", "%7B").replace("}", "%7D")
    response = client.get(f"/search/sparql?query={query}")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert "getWeather" in {row["n"]["value"] for row in response.json()["results"]["bindings"]}


def test_post_forms_and_result_formats(client: httpx.Client, registered: str) -> None:
    form = client.post("/search/sparql", data={"query": AGENT_QUERY}, headers={"accept": "text/csv"})
    assert form.status_code == 200
    assert form.headers["content-type"].startswith("text/csv")
    assert "getWeather" in form.text
    direct = client.post(
        "/search/sparql",
        content=AGENT_QUERY,
        headers={"content-type": "application/sparql-query", "accept": "application/sparql-results+xml"},
    )
    assert direct.status_code == 200
    assert "sparql-results+xml" in direct.headers["content-type"]
    tsv = client.get("/search/sparql", params={"query": AGENT_QUERY}, headers={"accept": "text/tab-separated-values"})
    assert tsv.headers["content-type"].startswith("text/tab-separated-values")
    assert "getWeather" in tsv.text
    ask = client.get("/search/sparql", params={"query": "ASK { ?a td:name 'getWeather' }"})
    assert ask.json() == {"head": {}, "boolean": True}
    head = client.head("/search/sparql", params={"query": AGENT_QUERY})
    assert head.status_code == 200
    assert head.content == b""


def test_construct_formats(client: httpx.Client, registered: str) -> None:
    query = f"CONSTRUCT {{ <{registered}> td:title ?t }} WHERE {{ <{registered}> td:title ?t }}"
    for accept, fmt in [
        ("", "json-ld"),
        ("text/turtle", "turtle"),
        ("application/n-triples", "nt"),
        ("application/rdf+xml", "xml"),
    ]:
        response = client.get("/search/sparql", params={"query": query}, headers={"accept": accept} if accept else {})
        assert response.status_code == 200, response.text
        with warnings.catch_warnings():  # rdflib's JSON-LD parser uses its own deprecated ConjunctiveGraph
            warnings.simplefilter("ignore", DeprecationWarning)
            graph = rdflib.Graph().parse(data=response.text, format=fmt)
        assert str(graph.value(rdflib.URIRef(registered), rdflib.URIRef("https://www.w3.org/2019/wot/td#title"))) == (
            "WeatherAgent"
        )


def test_dataset_parameters(client: httpx.Client, registered: str) -> None:
    query = "SELECT ?n WHERE { ?a td:hasActionAffordance/td:name ?n }"
    only = client.get("/search/sparql", params={"query": query, "default-graph-uri": registered})
    assert [row["n"]["value"] for row in only.json()["results"]["bindings"]] == ["getWeather"]
    other = client.get("/search/sparql", params={"query": query, "default-graph-uri": "urn:test:nothing"})
    assert other.json()["results"]["bindings"] == []


def test_sparqlwrapper_select_ask_construct(base_url: str, registered: str) -> None:
    wrapper = SPARQLWrapper(base_url + "/search/sparql")
    # Scoped to one graph: the session's database holds every other test's descriptions too.
    wrapper.setQuery(
        f"PREFIX td: <https://www.w3.org/2019/wot/td#> SELECT ?n WHERE {{ GRAPH <{registered}> {{ ?a td:name ?n }} }}"
    )
    wrapper.setReturnFormat(JSON)
    rows = wrapper.query().convert()["results"]["bindings"]  # type: ignore[index, call-overload]
    assert "getWeather" in {row["n"]["value"] for row in rows}
    wrapper.setQuery("ASK { ?a <https://www.w3.org/2019/wot/td#name> 'getWeather' }")
    assert wrapper.query().convert()["boolean"] is True  # type: ignore[index, call-overload]
    store = rdflib.Graph(store="SPARQLStore")
    store.open(base_url + "/search/sparql")
    graph = store.query(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{registered}> {{ ?s ?p ?o }} }}").graph
    assert graph is not None
    assert (None, rdflib.URIRef("https://www.w3.org/2019/wot/td#name"), rdflib.Literal("getWeather")) in graph


def test_jsonpath_and_xpath(client: httpx.Client, registered: str) -> None:
    response = client.get("/search/jsonpath", params={"query": "$[?@.title=='WeatherAgent'].id"})
    assert response.status_code == 200
    assert registered in response.json()
    bad = client.get("/search/jsonpath", params={"query": "$[?"})
    assert bad.status_code == 400
    assert bad.headers["content-type"].startswith("application/problem+json")
    assert client.get("/search/xpath", params={"query": "/"}).status_code == 501
    actions = client.get("/.well-known/wot").json()["actions"]
    assert {"searchSPARQL", "searchJSONPath"} <= set(actions)
    assert "searchXPath" not in actions


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback port that records any connection: hostile input must never reach it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.settimeout(0.2)
    seen: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = sock.accept()
            except OSError:
                continue
            seen.append(connection.recv(100))
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield sock.getsockname()[1], seen
    stop.set()
    thread.join()
    sock.close()


def test_hostile_inputs_are_4xx_and_never_go_out(client: httpx.Client, listener: tuple[int, list[bytes]]) -> None:
    port, seen = listener
    target = f"http://127.0.0.1:{port}/"
    for query in [
        f"SELECT * WHERE {{ SERVICE <{target}> {{ ?s ?p ?o }} }}",
        f"LOAD <{target}>",
        "INSERT DATA { <urn:a> <urn:b> <urn:c> }",
        "SELECT * WHERE { ?s ?p }",
        "SELECT * WHERE { FILTER(" + "(" * 3000 + "1" + ")" * 3000 + ") }",
    ]:
        for response in (
            client.get("/search/sparql", params={"query": query}),
            client.post("/search/sparql", data={"query": query}),
        ):
            assert response.status_code == 400, (query[:60], response.text)
            assert response.headers["content-type"].startswith("application/problem+json")
    assert client.post("/search/sparql", data={"update": "CLEAR ALL"}).status_code == 400
    assert client.post("/search/sparql", content=b"x", headers={"content-type": "text/plain"}).status_code == 415
    assert client.get("/search/sparql").status_code == 400
    syntax = client.get("/search/sparql", params={"query": "SELECT * WHERE { ?s ?p }"}).json()
    assert syntax["line"] == 1
    assert syntax["column"] > 0
    # A remote context (a metadata address too) is stored, left out of the RDF, and reported.
    document = weather("urn:test:hostile-context")
    document["@context"] = [*document["@context"], "http://169.254.169.254/latest/meta-data/", target]
    response = client.put(f"/things/{document['id']}", json=document, headers=TD_JSON)
    assert response.status_code in (201, 204), response.text
    notices = json.loads(response.headers["registry-notices"])
    # The seed agent also draws tool-design lint notices; the context notice must be among them.
    context_notices = [notice for notice in notices if notice["code"] == "unknown-context"]
    assert len(context_notices) == 2
    assert all(notice["code"].startswith("lint:") for notice in notices if notice not in context_notices)
    assert names(client, document["id"]) == ["getWeather"]
    stats = client.get("/search/stats").json()
    assert stats["unknownContexts"]["http://169.254.169.254/latest/meta-data/"] >= 1
    # Deeply nested documents are refused before anything walks them.
    nested: Any = "x"
    for _ in range(500):
        nested = {"a": nested}
    deep = {**weather("urn:test:deep"), "lmos:deep": nested}
    assert client.put("/things/urn:test:deep", json=deep, headers=TD_JSON).status_code == 400
    time.sleep(0.3)
    assert seen == []


def test_strict_mode_and_runaway_query(start_alone: Callable[[dict[str, str]], ServerProcess]) -> None:
    strict = start_alone({"REGISTRY_STRICT_CONTEXTS": "true", "REGISTRY_SPARQL_TIMEOUT": "1"})
    with httpx.Client(base_url=strict.base_url, timeout=30) as other:
        document = weather("urn:test:strict")
        document["@context"] = [*document["@context"], "https://webthings.io/schemas"]
        response = other.put(f"/things/{document['id']}", json=document, headers=TD_JSON)
        assert response.status_code == 400
        assert "https://webthings.io/schemas" in response.json()["detail"]
        assert wait_for_sparql(other) == ["getWeather"]  # the first query starts the worker
        runaway = "SELECT (COUNT(*) AS ?c) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
        started = time.monotonic()
        response = other.get("/search/sparql", params={"query": runaway})
        assert response.status_code == 503
        assert "did not finish" in response.json()["detail"]
        assert time.monotonic() - started < 5
        # Other requests are served meanwhile, and the stuck query was stopped: SPARQL answers again.
        assert other.get("/things/urn:test:sparql-weather").status_code == 200
        assert wait_for_sparql(other) == ["getWeather"]


def wait_for_sparql(http: httpx.Client, thing_id: str = "urn:test:sparql-weather") -> list[str]:
    """Names in the graph of ``thing_id``, once the SPARQL worker answers (it may be rebuilding its index)."""
    deadline = time.monotonic() + 20
    query = f"SELECT ?n WHERE {{ GRAPH <{thing_id}> {{ ?a td:hasActionAffordance/td:name ?n }} }}"
    while True:
        response = http.get("/search/sparql", params={"query": query})
        if response.status_code != 503 or time.monotonic() > deadline:
            break
        assert "Retry-After" in response.headers
        time.sleep(0.2)
    assert response.status_code == 200, response.text
    return [row["n"]["value"] for row in response.json()["results"]["bindings"]]


def test_a_crashed_sparql_worker_is_replaced(start_alone: Callable[[dict[str, str]], ServerProcess]) -> None:
    server = start_alone({})
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        assert wait_for_sparql(http) == ["getWeather"]
        (worker,) = sparql_workers(server)
        os.kill(worker, signal.SIGKILL)
        assert wait_for_sparql(http) == ["getWeather"]
        assert sparql_workers(server) != [worker]


def test_replicas_follow_writes_deletes_and_expiry(
    start_server: Callable[..., ServerProcess], client: httpx.Client, database_url: str
) -> None:
    replica = start_server(
        database=database_url
    )  # purges every 60 s: a lease that ends leaves the index without waiting for it
    with httpx.Client(base_url=replica.base_url, timeout=30) as other:
        document = weather("urn:test:replicated")
        assert client.put(f"/things/{document['id']}", json=document, headers=TD_JSON).status_code in (201, 204)
        assert names(other, document["id"]) == ["getWeather"]
        assert client.delete(f"/things/{document['id']}").status_code == 204
        assert names(other, document["id"]) == []
        assert names(client, document["id"]) == []
        leased = {**weather("urn:test:leased"), "registration": {"ttl": 1}}
        assert other.put(f"/things/{leased['id']}", json=leased, headers=TD_JSON).status_code in (201, 204)
        assert names(client, leased["id"]) == ["getWeather"]
        deadline = time.monotonic() + 10
        while names(client, leased["id"]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert names(client, leased["id"]) == []
        assert names(other, leased["id"]) == []


def test_a_query_over_the_memory_limit_costs_no_rebuild(
    start_alone: Callable[[dict[str, str]], ServerProcess],
) -> None:
    server = start_alone(
        {"REGISTRY_SPARQL_MEMORY_LIMIT": "700", "REGISTRY_SPARQL_TIMEOUT": "60", "REGISTRY_LOG_LEVEL": "info"}
    )
    with httpx.Client(base_url=server.base_url, timeout=90) as http:
        assert wait_for_sparql(http) == ["getWeather"]
        padding = "x" * 4000
        hog = f'SELECT (GROUP_CONCAT(?t) AS ?all) WHERE {{ ?x ?p ?a . ?y ?q ?b . ?z ?r ?c BIND("{padding}" AS ?t) }}'
        response = http.get("/search/sparql", params={"query": hog})
        assert response.status_code == 503, response.text
        assert "REGISTRY_SPARQL_MEMORY_LIMIT" in response.json()["detail"]
        assert "Retry-After" in response.headers
        assert http.get("/things/urn:test:sparql-weather").status_code == 200  # the rest of the API never noticed
        assert wait_for_sparql(http) == ["getWeather"]  # the worker is back, with its index
    log = server.output()
    assert log.count("SPARQL index built") == 1, log  # built once, at the first start
    assert "SPARQL index opened" in log  # taken up again after the worker died, not rebuilt
