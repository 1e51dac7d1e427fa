"""The SPARQL engine answers like rdflib on the same graph, and screens what must never run."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pyoxigraph as ox
import pytest
import rdflib

from registry.errors import BadRequest
from registry.semantic.graphs import registration_triples
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import RdfConverter
from registry.sparql.query import PREFIXES, SparqlEngine, screen
from registry.sparql.worker.index import BULK_FROM, RdfIndex
from tests.conftest import REAL_TDS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROLOGUE = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in PREFIXES.items())

QUERIES = {
    "vendor": "SELECT ?thing ?vendor WHERE { ?thing lmos:metadata/lmos:vendor/lmos:name ?vendor }",
    "capability": "SELECT ?thing WHERE { ?thing a lmos:Agent ; td:hasActionAffordance ?a . "
    "?a td:hasInputSchema/jsonschema:properties/jsonschema:propertyName 'question' }",
    "action by name": "SELECT ?thing WHERE { ?thing td:hasActionAffordance/td:name 'getWeather' }",
    "input property by name": "SELECT DISTINCT ?thing ?action WHERE { ?thing td:hasActionAffordance ?a . "
    "?a td:name ?action ; td:hasInputSchema/jsonschema:properties/jsonschema:propertyName ?p "
    "FILTER(?p = 'interactionMode') }",
    "security scheme": "SELECT DISTINCT ?thing ?type WHERE { ?thing td:hasSecurityConfiguration ?s . "
    "?thing td:definesSecurityScheme ?scheme . ?scheme a ?type }",
    "registration time": "SELECT ?thing ?created WHERE { ?thing discovery:hasRegistrationInformation/"
    "discovery:dateCreated ?created FILTER(?created >= '2026-01-01T00:00:00Z'^^xsd:dateTime) }",
    "titles": "SELECT ?thing ?title WHERE { ?thing td:title ?title FILTER(isIRI(?thing)) }",
}


@pytest.fixture(scope="module")
def corpus() -> tuple[RdfIndex, rdflib.Graph]:
    import datetime as dt

    converter = RdfConverter(ContextLibrary.load())
    documents = [json.loads(path.read_text()) for path in sorted(REAL_TDS.glob("*.json"))]
    documents += [json.loads((FIXTURES / name).read_text()) for name in ("weather-agent.td.json", "seed-tool.td.json")]
    index, reference = RdfIndex(), rdflib.Graph()
    now = dt.datetime(2026, 11, 21, tzinfo=dt.UTC)
    seen: set[str] = set()
    for number, document in enumerate(documents):
        thing_id = document.get("id") or f"urn:test:{number}"
        if thing_id in seen:  # one graph per id: a second TD with the same id replaces the first
            continue
        seen.add(thing_id)
        ntriples = converter.convert({**document, "id": thing_id}).ntriples
        ntriples += registration_triples(thing_id, now, now, None, None)
        index.replace([(thing_id, ntriples)])
        reference.parse(data=ntriples, format="nt")
    return index, reference


def _term(value: dict[str, str]) -> rdflib.term.Node:
    if value["type"] == "uri":
        return rdflib.URIRef(value["value"])
    if value["type"] == "bnode":
        return rdflib.BNode(value["value"])
    return rdflib.Literal(value["value"], lang=value.get("xml:lang"), datatype=value.get("datatype"))


def _rows(payload: dict[str, object]) -> set[tuple[tuple[str, rdflib.term.Node], ...]]:
    bindings = payload["results"]["bindings"]  # type: ignore[index]
    return {tuple(sorted((name, _term(value)) for name, value in row.items())) for row in bindings}


@pytest.mark.parametrize("name", list(QUERIES))
async def test_answers_equal_rdflib(corpus: tuple[RdfIndex, rdflib.Graph], name: str) -> None:
    index, reference = corpus
    engine = SparqlEngine(index.store, timeout=10, max_results=10_000, service_allowlist=())
    answer = await engine.run(QUERIES[name], "application/json")
    ours = _rows(msgspec.json.decode(answer.content))
    expected = {
        tuple(sorted((str(var), row[var]) for var in row.labels if row[var] is not None))
        for row in reference.query(PROLOGUE + QUERIES[name])
    }
    assert ours == expected
    assert ours, f"query {name!r} found nothing: the corpus should exercise it"


@pytest.mark.parametrize(
    "query",
    [
        "INSERT DATA { <urn:a> <urn:b> <urn:c> }",
        "LOAD <http://169.254.169.254/latest/meta-data/>",
        "PREFIX x: <urn:x> DELETE WHERE { ?s ?p ?o }",
        "CLEAR ALL",
        "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }",
        "SELECT * WHERE { SERVICE SILENT ?endpoint { ?s ?p ?o } }",
        "select * where { service <http://127.0.0.1:9/> { ?s ?p ?o } }",
        "SELECT * WHERE { \\u0053ERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }",
        "SELECT * WHERE { FILTER(" + "(" * 5000 + "1" + ")" * 5000 + ") }",
    ],
)
def test_screen_refuses(query: str) -> None:
    with pytest.raises(BadRequest):
        screen(query)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * WHERE { ?s <urn:p> 'SERVICE <http://x/>' } # SERVICE <http://y/>",
        "SELECT ?service WHERE { ?service <urn:insert> ?load }",
        "PREFIX service: <urn:s#> SELECT * WHERE { ?s service:load ?o }",
    ],
)
def test_screen_accepts_lookalikes(query: str) -> None:
    screen(query)


def test_allow_listed_service_passes_screen() -> None:
    screen("SELECT * WHERE { SERVICE <https://query.example/sparql> { ?s ?p ?o } }", ["https://query.example/sparql"])
    with pytest.raises(BadRequest):
        screen("SELECT * WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?o } }", ["https://query.example/sparql"])


def graph(index: RdfIndex, name: str | None) -> set[str]:
    """The triples of a description's graph (None: of the store's own default graph), as N-Triples terms."""
    where = ox.DefaultGraph() if name is None else ox.NamedNode(name)
    return {str(quad.triple) for quad in index.store.quads_for_pattern(None, None, None, where)}


async def select(engine: SparqlEngine, query: str, default_graphs: list[str] | None = None) -> list[str]:
    answer = await engine.run(query, "application/json", default_graphs or ())
    bindings = msgspec.json.decode(answer.content)["results"]["bindings"]
    return sorted(row["s"]["value"] for row in bindings)


async def test_queries_read_the_union_of_the_descriptions_graphs() -> None:
    index = RdfIndex()
    engine = SparqlEngine(index.store, timeout=10, max_results=100, service_allowlist=())
    shared = "<urn:shared> <urn:p> <urn:o> .\n"
    index.replace([("urn:a", shared + "<urn:a> <urn:p> _:x .\n"), ("urn:b", shared + "<urn:b> <urn:p> _:y .\n")])
    assert index.descriptions == 2
    assert graph(index, None) == set()  # nothing copied into the store's default graph
    assert await select(engine, "SELECT ?s WHERE { ?s <urn:p> ?o }") == ["urn:a", "urn:b", "urn:shared", "urn:shared"]
    assert await select(engine, "SELECT DISTINCT ?s WHERE { ?s <urn:p> ?o }") == ["urn:a", "urn:b", "urn:shared"]
    index.remove(["urn:a"])
    assert await select(engine, "SELECT DISTINCT ?s WHERE { ?s <urn:p> ?o }") == ["urn:b", "urn:shared"]
    index.replace([("urn:b", "<urn:b> <urn:q> 'new' .\n")])
    assert await select(engine, "SELECT ?s WHERE { ?s ?p ?o }") == ["urn:b"]
    assert index.descriptions == 1
    engine.close()


async def test_a_query_naming_its_dataset_reads_what_it_names() -> None:
    index = RdfIndex()
    engine = SparqlEngine(index.store, timeout=10, max_results=100, service_allowlist=())
    index.replace([("urn:a", '<urn:a> <urn:p> "1" .\n'), ("urn:b", '<urn:b> <urn:p> "2" .\n')])
    assert await select(engine, "SELECT ?s FROM <urn:a> WHERE { ?s ?p ?o }") == ["urn:a"]
    assert await select(engine, "select ?s from named <urn:b> where { graph ?g { ?s ?p ?o } }") == ["urn:b"]
    assert await select(engine, "SELECT ?s WHERE { ?s ?p ?o }", default_graphs=["urn:b"]) == ["urn:b"]
    assert await select(engine, "SELECT ?s WHERE { ?s ?p ?o FILTER(?o != 'FROM <urn:a>') }") == ["urn:a", "urn:b"]
    engine.close()


@pytest.mark.parametrize(
    ("query", "names_dataset"),
    [
        ("SELECT * FROM <urn:g> WHERE { ?s ?p ?o }", True),
        ("CONSTRUCT { ?s ?p ?o } from named <urn:g> WHERE { GRAPH ?g { ?s ?p ?o } }", True),
        ("SELECT * \\u0046ROM <urn:g> WHERE { ?s ?p ?o }", True),
        ("SELECT ?from WHERE { ?from <urn:from> 'FROM <urn:g>' } # FROM <urn:g>", False),
        ("PREFIX from: <urn:f#> SELECT * WHERE { ?s from:x ?o }", False),
    ],
)
def test_screen_sees_a_dataset_clause(query: str, names_dataset: bool) -> None:
    assert screen(query).names_dataset is names_dataset


def test_descriptions_are_in_their_graph_only() -> None:
    index = RdfIndex()
    index.replace([("urn:c", '<urn:c> <urn:p> _:x .\n_:x <urn:q> "1" .\n'), ("urn:empty", "")])
    index.replace([("urn:empty", "")])
    named = list(index.store.quads_for_pattern(None, None, None, ox.NamedNode("urn:c")))
    assert len(named) == 2
    (link,) = [quad.object for quad in named if quad.predicate == ox.NamedNode("urn:p")]
    assert link in {quad.subject for quad in named}  # one blank node in both triples
    assert graph(index, None) == set()
    assert index.descriptions == 1  # a description without RDF has no graph and is not counted


def test_a_replaced_description_leaves_nothing_behind() -> None:
    index = RdfIndex()
    index.replace([("urn:c", '<urn:c> <urn:p> _:x .\n_:x <urn:q> "1" .\n'), ("urn:d", '<urn:d> <urn:p> "1" .\n')])
    index.replace([("urn:c", '<urn:c> <urn:p> _:y .\n_:y <urn:q> "2" .\n')])
    named = list(index.store.quads_for_pattern(None, None, None, ox.NamedNode("urn:c")))
    assert len(named) == 2
    assert ox.Literal("2") in {quad.object for quad in named}
    (link,) = [quad.object for quad in named if quad.predicate == ox.NamedNode("urn:p")]
    assert link in {quad.subject for quad in named}  # one blank node in both triples
    assert graph(index, "urn:d") == {'<urn:d> <urn:p> "1"'}
    index.replace([("urn:d", "")])  # a description that no longer has RDF: its graph goes
    assert not index.store.contains_named_graph(ox.NamedNode("urn:d"))
    assert index.descriptions == 1
    assert len(index) == 2


def test_bulk_loaded_descriptions_keep_their_blank_nodes_apart(tmp_path: Path) -> None:
    index = RdfIndex(tmp_path)
    text = '<urn:{0}> <urn:p> _:x .\n_:x <urn:q> "_:x stays \\" _:x" .\n_:x <urn:r> <urn:a_:x> .\n'
    index.load([("urn:one", text.format("one")), ("urn:two", text.format("two"))])
    assert index.descriptions == 2
    nodes = {quad.object for quad in index.store.quads_for_pattern(None, ox.NamedNode("urn:p"), None, None)}
    assert len(nodes) == 2  # one per description
    literals = {quad.object.value for quad in index.store.quads_for_pattern(None, ox.NamedNode("urn:q"), None, None)}
    assert literals == {'_:x stays " _:x'}
    iris = {quad.object for quad in index.store.quads_for_pattern(None, ox.NamedNode("urn:r"), None, None)}
    assert iris == {ox.NamedNode("urn:a_:x")}
    assert len(list(index.store.quads_for_pattern(None, None, None, ox.NamedNode("urn:one")))) == 3


def test_bulk_loaded_descriptions_keep_apart_labels_of_any_script_and_take_unique_ones_as_they_are(
    tmp_path: Path,
) -> None:
    """The directory writes labels unique to each write: those are loaded as they are; a label another description
    of the batch uses (in any script) is renamed."""
    index = RdfIndex(tmp_path)
    shared = '<urn:{0}> <urn:p> _:été1 .\n_:été1 <urn:q> "{0}" .\n'
    unique = '<urn:{0}> <urn:p> _:b{0}n1 .\n_:b{0}n1 <urn:q> "{0}" .\n'
    index.load([(f"urn:s{n}", shared.format(f"s{n}")) for n in range(3)] + [("urn:u", unique.format("u"))])
    nodes = {quad.object for quad in index.store.quads_for_pattern(None, ox.NamedNode("urn:p"), None, None)}
    assert len(nodes) == 4  # one per description
    for name in ("s0", "s1", "s2", "u"):
        named = list(index.store.quads_for_pattern(None, None, None, ox.NamedNode(f"urn:{name}")))
        (link,) = [quad.object for quad in named if quad.predicate == ox.NamedNode("urn:p")]
        assert [quad.object for quad in named if quad.subject == link] == [ox.Literal(name)]


def test_a_burst_of_new_descriptions_is_added_at_once_and_stays_apart() -> None:
    index = RdfIndex()
    index.replace([("urn:old", '<urn:old> <urn:p> "1" .\n')])
    text = '<urn:{0}> <urn:p> _:x .\n_:x <urn:q> "{0}" .\n'
    burst = [(f"urn:n{number}", text.format(f"n{number}")) for number in range(BULK_FROM)]
    index.replace([("urn:old", '<urn:old> <urn:p> "2" .\n'), *burst])
    assert index.descriptions == BULK_FROM + 1
    assert graph(index, "urn:old") == {'<urn:old> <urn:p> "2"'}
    links = {quad.object for quad in index.store.quads_for_pattern(None, ox.NamedNode("urn:p"), None, None)}
    assert len(links) == BULK_FROM + 1  # one blank node per new description
    named = list(index.store.quads_for_pattern(None, None, None, ox.NamedNode("urn:n7")))
    assert {quad.predicate.value for quad in named} == {"urn:p", "urn:q"}
    (link,) = [quad.object for quad in named if quad.predicate == ox.NamedNode("urn:p")]
    assert link in {quad.subject for quad in named}  # one blank node in both triples
    index.replace([("urn:n7", '<urn:n7> <urn:p> "3" .\n'), ("urn:n8", "")])  # then put back or gone like any
    assert graph(index, "urn:n7") == {'<urn:n7> <urn:p> "3"'}
    assert index.descriptions == BULK_FROM
    assert len(index) == 1 + 1 + 2 * (BULK_FROM - 2)  # urn:old, urn:n7, two quads of each other one


async def test_result_cap(corpus: tuple[RdfIndex, rdflib.Graph]) -> None:
    index, _ = corpus
    engine = SparqlEngine(index.store, timeout=10, max_results=3, service_allowlist=())
    for query in ["SELECT * WHERE { ?s ?p ?o }", "CONSTRUCT WHERE { ?s ?p ?o }"]:
        with pytest.raises(BadRequest, match="more than 3 results"):
            await engine.run(query, "*/*")
    answer = await engine.run("SELECT * WHERE { ?s ?p ?o } LIMIT 3", "text/csv")
    assert answer.media_type == "text/csv"
    assert len(answer.content.decode().strip().splitlines()) == 4
    engine.close()
