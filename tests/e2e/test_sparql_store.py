"""/search/sparql answered by an external SPARQL store (a real Oxigraph server) that the directory pushes its RDF
to: registry server processes on real PostgreSQL databases, no local SPARQL worker."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import asyncpg
import httpx
import psutil
import pytest

from tests.e2e.test_connection_budget import settled_count
from tests.support.keys import create_key
from tests.support.oxigraph import OxigraphServer
from tests.support.servers import ServerProcess, sparql_answer
from tests.support.things import thing

PROBLEM = "application/problem+json"
RESULTS = {"Accept": "application/sparql-results+json"}
#: A graph the directory never writes: gone only when the store is emptied for a rebuild.
SENTINEL = "urn:test:sentinel"


@pytest.fixture
def oxigraph() -> Iterator[OxigraphServer]:
    server = OxigraphServer().start()
    yield server
    server.close()


def sparql(base_url: str, query: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(f"{base_url}/search/sparql", data={"query": query}, headers=headers or RESULTS, timeout=30)


def graph_exists(base_url: str, thing_id: str) -> bool:
    """Asked once the store has caught up: a server started on the shared test database builds a copy of all that
    earlier tests left there first, which took longer than a query's wait in one CI run on a slow machine."""
    answer = sparql_answer(base_url, f"ASK {{ GRAPH <{thing_id}> {{ ?s ?p ?o }} }}", timeout=120)
    return bool(answer.json()["boolean"])


def titles(base_url: str, thing_id: str) -> list[str]:
    answer = sparql(base_url, f"SELECT ?title WHERE {{ <{thing_id}> td:title ?title }}")
    assert answer.status_code == 200, answer.text
    return [row["title"]["value"] for row in answer.json()["results"]["bindings"]]


def register(base_url: str, document: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    answer = httpx.put(f"{base_url}/things/{document['id']}", json=document, headers=headers, timeout=30)
    assert answer.status_code in (200, 201, 204), answer.text


def plant_sentinel(store: OxigraphServer) -> None:
    store.update(f"INSERT DATA {{ GRAPH <{SENTINEL}> {{ <{SENTINEL}> <{SENTINEL}> 1 }} }}")


def eventually(check: Callable[[], bool], within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return check()


async def append_rdf(database_url: str, thing_id: str, ntriples: str) -> None:
    """Stored RDF as an earlier version may have written it."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "UPDATE description_rdf SET ntriples = ntriples || $1 WHERE thing_id = $2", ntriples, thing_id
        )
    finally:
        await connection.close()


def pushes(server: ServerProcess) -> bool:
    stats = httpx.get(f"{server.base_url}/search/stats", timeout=10).json()
    return bool(stats.get("pushedByThisReplica"))


def test_writes_replaces_deletes_and_ended_leases_show_in_the_store(
    own_database_url: str, start_server: Callable[..., ServerProcess], oxigraph: OxigraphServer
) -> None:
    server = start_server(oxigraph.env, database=own_database_url)
    children = psutil.Process(server.process.pid if server.process else 0).children(recursive=True)
    assert not [child for child in children if "registry.sparql.worker" in " ".join(child.cmdline())]
    document = thing("First title")
    register(server.base_url, document)
    assert titles(server.base_url, document["id"]) == ["First title"]  # read-your-writes
    assert document["id"] in oxigraph.graphs()  # in the store itself
    register(server.base_url, {**document, "title": "Second title"})
    assert titles(server.base_url, document["id"]) == ["Second title"]
    assert httpx.delete(f"{server.base_url}/things/{document['id']}").status_code == 204
    assert not graph_exists(server.base_url, document["id"])
    assert document["id"] not in oxigraph.graphs()

    leased = {**thing("Leased"), "registration": {"ttl": 1}}
    register(server.base_url, leased)
    assert graph_exists(server.base_url, leased["id"])
    # Gone from the store when the lease ends (no purge runs in the meantime, no query wakes the pusher): within
    # 15 s leaves a loaded machine room and is still far from the first purge (60 s).
    assert eventually(lambda: leased["id"] not in oxigraph.graphs(), within=15)
    assert not graph_exists(server.base_url, leased["id"])

    ready = httpx.get(f"{server.base_url}/readyz")
    assert ready.status_code == 200, ready.text
    metrics = httpx.get(f"{server.base_url}/metrics").text
    assert "registry_sparql_store_pushes_total" in metrics


def test_a_restart_takes_up_the_store_where_it_left_off(
    own_database_url: str, oxigraph: OxigraphServer, start_server: Callable[..., ServerProcess]
) -> None:
    first, while_down = thing("Before the restart"), thing("Written while no replica pushed")
    with ServerProcess(own_database_url, oxigraph.env) as server:
        register(server.base_url, first)
        assert graph_exists(server.base_url, first["id"])
        plant_sentinel(oxigraph)
        server.stop()
        # A replica with its own local index writes meanwhile.
        register(start_server(database=own_database_url).base_url, while_down)
        server.start()
        assert graph_exists(server.base_url, while_down["id"])  # caught up from the store's position
        assert graph_exists(server.base_url, first["id"])
    assert SENTINEL in oxigraph.graphs()  # not rebuilt


def test_a_store_of_another_database_is_rebuilt(
    own_database_url: str, database_url: str, oxigraph: OxigraphServer, start_server: Callable[..., ServerProcess]
) -> None:
    other = thing("Of the other database")
    with ServerProcess(database_url, oxigraph.env) as server:
        register(server.base_url, other)
        assert graph_exists(server.base_url, other["id"])
    plant_sentinel(oxigraph)
    ours = thing("Of this database")
    server = start_server(oxigraph.env, database=own_database_url)
    register(server.base_url, ours)
    assert graph_exists(server.base_url, ours["id"])
    assert not graph_exists(server.base_url, other["id"])
    assert SENTINEL not in oxigraph.graphs()


def test_one_replica_pushes_the_others_answer_and_one_takes_over(
    own_database_url: str, oxigraph: OxigraphServer
) -> None:
    with (
        ServerProcess(own_database_url, oxigraph.env) as first,
        ServerProcess(own_database_url, oxigraph.env) as second,
    ):
        assert eventually(lambda: pushes(first) or pushes(second))
        pusher, other = (first, second) if pushes(first) else (second, first)
        assert not pushes(other)
        # Each replica: its pool (4) and one lock connection; the pusher: 2 more (its pool and its LISTEN).
        assert settled_count(own_database_url, 2 * (4 + 1) + 2) == {
            "lmos-registry": 2 * 3,
            "lmos-registry-listen": 2,
            "lmos-registry-sparql-lock": 2,
            "lmos-registry-sparql": 1,
            "lmos-registry-sparql-listen": 1,
        }
        for writer, reader in ((pusher, other), (other, pusher), (other, other)):
            document = thing("Replicated")
            register(writer.base_url, document)
            assert titles(reader.base_url, document["id"]) == ["Replicated"]  # read-your-writes on any replica
        pusher.kill()
        assert eventually(lambda: pushes(other))
        document = thing("After the takeover")
        register(other.base_url, document)
        assert titles(other.base_url, document["id"]) == ["After the takeover"]


def test_a_store_emptied_behind_the_directorys_back_is_built_again(
    own_database_url: str, oxigraph: OxigraphServer, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(oxigraph.env, database=own_database_url)
    document = thing("Kept")
    register(server.base_url, document)
    assert graph_exists(server.base_url, document["id"])
    oxigraph.update("DROP ALL")
    assert eventually(lambda: document["id"] in oxigraph.graphs())
    assert graph_exists(server.base_url, document["id"])


def test_a_tenant_reader_sees_only_its_tenant_and_the_shared_graphs(
    own_database_url: str, oxigraph: OxigraphServer, start_server: Callable[..., ServerProcess]
) -> None:
    writer = create_key(own_database_url, "writer", "--scopes", "write")
    tenant_b = create_key(own_database_url, "tenant-b", "--scopes", "write", "--tenant", "b")
    server = start_server({**oxigraph.env, "REGISTRY_AUTH": "writes"}, database=own_database_url)
    shared, of_b = thing("Shared"), thing("Of tenant b")
    register(server.base_url, shared, {"Authorization": f"Bearer {writer}"})
    register(server.base_url, of_b, {"Authorization": f"Bearer {tenant_b}"})
    query = "SELECT DISTINCT ?s WHERE { ?s td:title ?title }"
    for headers, sees_b in (({}, False), ({"Authorization": f"Bearer {tenant_b}"}, True)):
        answer = sparql(server.base_url, query, {**RESULTS, **headers})
        assert answer.status_code == 200, answer.text
        subjects = {row["s"]["value"] for row in answer.json()["results"]["bindings"]}
        assert shared["id"] in subjects
        assert (of_b["id"] in subjects) is sees_b


def test_store_errors_are_problems_and_the_directory_recovers(
    own_database_url: str, oxigraph: OxigraphServer, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(oxigraph.env, database=own_database_url)
    invalid = sparql(server.base_url, "SELECT * WHERE { ?s ?p ")
    assert invalid.status_code == 400
    assert invalid.headers["content-type"].startswith(PROBLEM)
    assert "not valid" in invalid.json()["detail"]

    oxigraph.stop()
    down = sparql(server.base_url, "ASK { ?s ?p ?o }")
    assert down.status_code == 503, down.text
    assert down.headers["content-type"].startswith(PROBLEM)
    assert int(down.headers["retry-after"]) > 0
    assert eventually(lambda: httpx.get(f"{server.base_url}/readyz").status_code == 503)
    assert httpx.get(f"{server.base_url}/readyz").json()["checks"]["sparql_worker"]["ok"] is False
    document = thing("Written while the store was down")
    register(server.base_url, document)  # the Things API does not depend on the store

    oxigraph.start()
    assert eventually(lambda: sparql(server.base_url, "ASK { ?s ?p ?o }").status_code == 200)
    assert titles(server.base_url, document["id"]) == ["Written while the store was down"]
    assert eventually(lambda: httpx.get(f"{server.base_url}/readyz").status_code == 200)


def test_a_store_without_the_union_default_graph_is_named_by_readyz(
    own_database_url: str, start_server: Callable[..., ServerProcess]
) -> None:
    store = OxigraphServer(union_default_graph=False).start()
    try:
        server = start_server(store.env, database=own_database_url)
        assert eventually(lambda: "union" in httpx.get(f"{server.base_url}/readyz").text)
        assert httpx.get(f"{server.base_url}/readyz").status_code == 503
    finally:
        store.close()


def test_answers_are_converted_like_the_local_index_does(
    own_database_url: str, oxigraph: OxigraphServer, start_server: Callable[..., ServerProcess]
) -> None:
    server = start_server(oxigraph.env, database=own_database_url)
    document = thing(f"Converted {uuid.uuid4().hex[:8]}")
    register(server.base_url, document)
    csv = sparql(server.base_url, f"SELECT ?t WHERE {{ <{document['id']}> td:title ?t }}", {"Accept": "text/csv"})
    assert csv.headers["content-type"].startswith("text/csv")
    assert document["title"] in csv.text
    graph = sparql(server.base_url, f"CONSTRUCT WHERE {{ <{document['id']}> td:title ?t }}", {"Accept": "text/turtle"})
    assert graph.status_code == 200, graph.text
    assert graph.headers["content-type"].startswith("text/turtle")
    assert document["title"] in graph.text


def test_a_copy_of_the_layout_before_is_rebuilt_without_statements_about_others(
    own_database_url: str, oxigraph: OxigraphServer, start_server: Callable[..., ServerProcess]
) -> None:
    """A copy pushed before descriptions were kept to statements about themselves (its marker has no layout) may
    hold what one said about another: it is built again, from stored RDF without such statements."""
    victim, writer = thing("Victim"), thing("Writer")
    with ServerProcess(own_database_url, oxigraph.env) as server:
        register(server.base_url, victim)
        register(server.base_url, writer)
        assert graph_exists(server.base_url, writer["id"])
    foreign = f'<{victim["id"]}> <https://www.w3.org/2019/wot/td#title> "Second title" .\n'
    asyncio.run(append_rdf(own_database_url, writer["id"], foreign))
    oxigraph.update(f"INSERT DATA {{ GRAPH <{writer['id']}> {{ {foreign} }} }}")
    oxigraph.update("DELETE WHERE { GRAPH <urn:lmos-registry:state> { ?s <urn:lmos-registry:layout> ?layout } }")
    plant_sentinel(oxigraph)
    server = start_server(oxigraph.env, database=own_database_url)
    assert graph_exists(server.base_url, writer["id"])
    assert SENTINEL not in oxigraph.graphs()
    assert titles(server.base_url, victim["id"]) == ["Victim"]


def test_a_query_from_one_graph_reaches_the_store_as_its_dataset(
    own_database_url: str, oxigraph: OxigraphServer, start_server: Callable[..., ServerProcess]
) -> None:
    """Oxigraph with a union default graph ignores a query's FROM: the directory sends the query's dataset as the
    protocol's default-graph-uri / named-graph-uri, so FROM <g> reads one description, not all of them; for an
    administrator (every graph) and for an anonymous reader (the shared graphs) alike."""
    admin = create_key(own_database_url, "admin", "--scopes", "admin")
    server = start_server({**oxigraph.env, "REGISTRY_AUTH": "writes"}, database=own_database_url)
    first, second = thing("First"), thing("Second")
    for document in (first, second):
        register(server.base_url, document, {"Authorization": f"Bearer {admin}"})
    assert graph_exists(server.base_url, second["id"])
    queries = {
        f"SELECT ?title FROM <{first['id']}> WHERE {{ ?s td:title ?title }}": ["First"],
        f"SELECT ?title FROM NAMED <{second['id']}> WHERE {{ GRAPH ?g {{ ?s td:title ?title }} }}": ["Second"],
        f"SELECT ?title FROM NAMED <{second['id']}> WHERE {{ ?s td:title ?title }}": [],
    }
    for reader in ({}, {"Authorization": f"Bearer {admin}"}):
        for query, expected in queries.items():
            answer = sparql(server.base_url, query, {**RESULTS, **reader})
            assert answer.status_code == 200, answer.text
            assert [row["title"]["value"] for row in answer.json()["results"]["bindings"]] == expected, (reader, query)
