"""JSON-LD to RDF: names survive, pyld agrees on everything else, LMOS spellings meet, nothing is fetched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
import rdflib
from pyld import jsonld
from rdflib.compare import isomorphic

from registry.semantic import rdf as readings
from registry.semantic.loader import ContextLibrary
from registry.semantic.rdf import LMOS_IRI, RdfConverter
from tests.conftest import REAL_TDS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL_TD_FILES = sorted(REAL_TDS.glob("*.json"))
TD = "https://www.w3.org/2019/wot/td#"
JSONSCHEMA = "https://www.w3.org/2019/wot/json-schema#"
#: Triples written from property-based @index (names of affordances, schema properties, security schemes).
INDEX_PREDICATES = {TD + "name", JSONSCHEMA + "propertyName", TD + "hasInstanceConfiguration"}

library = ContextLibrary.load()
converter = RdfConverter(library)


def graph_of(document: dict[str, Any]) -> rdflib.Graph:
    rdf = converter.convert(document)
    assert rdf.error is None, rdf.error
    return rdflib.Graph().parse(data=rdf.ntriples, format="nt")


def known(path: Path) -> bool:
    return not converter.unknown_contexts(json.loads(path.read_text()))


def schema_properties(schema: Any) -> list[tuple[dict[str, Any], str]]:
    """(schema, property name) for every ``properties`` member of a data schema, at any depth."""
    found: list[tuple[dict[str, Any], str]] = []
    if isinstance(schema, dict):
        for name, child in (
            (schema.get("properties") or {}).items() if isinstance(schema.get("properties"), dict) else []
        ):
            found.append((schema, name))
            found.extend(schema_properties(child))
        for key in ("items", "input", "output", "data", "subscription", "cancellation", "dataResponse"):
            value = schema.get(key)
            for item in value if isinstance(value, list) else [value]:
                found.extend(schema_properties(item))
        for key in ("oneOf", "allOf", "anyOf"):
            for item in schema.get(key) or []:
                found.extend(schema_properties(item))
    return found


@pytest.mark.parametrize("path", REAL_TD_FILES, ids=lambda path: path.stem)
def test_every_affordance_and_schema_property_is_named(path: Path) -> None:
    document = json.loads(path.read_text())
    graph = graph_of(document)
    names = {str(o) for o in graph.objects(None, rdflib.URIRef(TD + "name"))}
    property_names = {str(o) for o in graph.objects(None, rdflib.URIRef(JSONSCHEMA + "propertyName"))}
    for kind in ("properties", "actions", "events"):
        for name, affordance in (document.get(kind) or {}).items():
            assert name in names, f"{kind}/{name} has no td:name"
            for _, child in schema_properties(affordance):
                if kind == "properties" and child in (affordance.get("properties") or {}):
                    # Top-level schema properties of a property affordance are indexed by "name" there.
                    assert child in names | property_names
                else:
                    assert child in property_names, f"{kind}/{name}: schema property {child} has no name"


@pytest.mark.parametrize("path", [path for path in REAL_TD_FILES if known(path)], ids=lambda path: path.stem)
def test_pyld_expansion_is_contained(path: Path) -> None:
    """pyld (same offline contexts) gives the same graph once the @index name triples it drops are set aside."""
    document = json.loads(path.read_text())
    ours = graph_of(document)
    options = {"format": "application/n-quads", "documentLoader": library.pyld_loader(), "base": ""}
    nquads = jsonld.to_rdf(document, options)
    theirs = rdflib.Graph().parse(data=nquads, format="nt")
    for graph in (ours, theirs):
        for triple in list(graph):
            # Name triples are compared by the test above. pyld resolves relative references against a
            # made-up base; JSON-LD drops them when the document has no base, as here.
            if str(triple[1]) in INDEX_PREDICATES or str(triple[2]).startswith(jsonld.DEFAULT_BASE_IRI):
                graph.remove(triple)
    assert isomorphic(ours, theirs)


@pytest.mark.parametrize(
    "binding",
    [
        "https://eclipse.dev/lmos/protocol/v1",
        "https://eclipse.dev/lmos/protocol/v1/",
        "https://eclipse.dev/lmos/protocol/v1#",
        {"@id": "https://eclipse.dev/lmos/protocol/v1", "@prefix": True},
        None,
    ],
)
def test_lmos_spellings_meet_in_one_namespace(binding: Any) -> None:
    document = json.loads((FIXTURES / "weather-agent.td.json").read_text())
    document["@context"] = ["https://www.w3.org/2022/wot/td/v1.1"] + ([{"lmos": binding}] if binding else [])
    graph = graph_of(document)
    thing = rdflib.URIRef(document["id"])
    assert (thing, rdflib.RDF.type, rdflib.URIRef(LMOS_IRI + "Agent")) in graph
    vendor = graph.value(graph.value(thing, rdflib.URIRef(LMOS_IRI + "metadata")), rdflib.URIRef(LMOS_IRI + "vendor"))
    assert str(graph.value(vendor, rdflib.URIRef(LMOS_IRI + "name"))) == "Deutsche Telekom AG"
    assert not [p for p in graph.predicates() if "eclipse.dev" in str(p) and not str(p).startswith(LMOS_IRI)]


def test_full_lmos_iris_with_slash_are_made_canonical() -> None:
    document = {
        "@context": "https://www.w3.org/2022/wot/td/v1.1",
        "id": "urn:example:slash",
        "@type": "https://eclipse.dev/lmos/protocol/v1/Tool",
        "title": "t",
        "securityDefinitions": {"nosec": {"scheme": "nosec"}},
        "security": "nosec",
    }
    graph = graph_of(document)
    assert (rdflib.URIRef("urn:example:slash"), rdflib.RDF.type, rdflib.URIRef(LMOS_IRI + "Tool")) in graph


def test_unknown_remote_context_is_left_out_not_fetched() -> None:
    document = json.loads((FIXTURES / "weather-agent.td.json").read_text())
    document["@context"] = [*document["@context"], "http://169.254.169.254/latest/meta-data/"]
    rdf = converter.convert(document)
    assert rdf.unknown_contexts == ("http://169.254.169.254/latest/meta-data/",)
    assert "getWeather" in rdf.ntriples


def test_old_td_context_url_is_served_offline() -> None:
    assert library.get("http://www.w3.org/ns/td") is library.get("https://www.w3.org/2022/wot/td/v1.1")
    assert library.get("https://www.w3.org/2019/wot/td/v1") is not None
    assert library.get("https://w3c.github.io/wot-discovery/context/discovery-context.jsonld") is not None


def test_operator_context_directory(tmp_path: Path) -> None:
    (tmp_path / "webthings.jsonld").write_text(json.dumps({"@context": {"Lock": "https://webthings.io/schemas#Lock"}}))
    (tmp_path / "index.json").write_text(json.dumps({"https://webthings.io/schemas": "webthings.jsonld"}))
    document = json.loads((REAL_TDS / "wot-testing_2022_webthings_lock.td.json").read_text())
    rdf = RdfConverter(ContextLibrary.load(tmp_path)).convert(document)
    assert rdf.unknown_contexts == ()
    assert "<https://webthings.io/schemas#Lock>" in rdf.ntriples


def canonical(ntriples: str) -> str:
    dataset = ox.Dataset(ox.parse(ntriples, ox.RdfFormat.N_TRIPLES))
    dataset.canonicalize(ox.CanonicalizationAlgorithm.UNSTABLE)
    return "\n".join(sorted(str(dataset).splitlines()))


SYNTHETIC = [
    {
        "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"@language": "de", "ex": "http://example.org/ns#"}],
        "id": "urn:example:synthetic",
        "@type": ["Thing", "ex:Device"],
        "title": "Gerät",
        "titles": {"en": "Device", "de": "Gerät"},
        "ex:weight": 1.5,
        "ex:count": 3,
        "ex:big": 1e22,
        "ex:whole": 2.0,
        "ex:on": True,
        "ex:quote": 'say "hi"\nnow \\ ok',
        "ex:nested": {"@context": {"inner": "http://example.org/inner#"}, "inner:x": "y", "@id": "_:shared"},
        "ex:again": {"@id": "_:shared"},
        "securityDefinitions": {"nosec": {"scheme": "nosec"}},
        "security": ["nosec"],
        "properties": {
            "p": {
                "type": "number",
                "minimum": -0.25,
                "forms": [{"href": "http://example.org/p", "op": ["readproperty"]}],
            }
        },
    },
    {
        "@context": "https://www.w3.org/2022/wot/td/v1.1",
        "id": "urn:example:list",
        "title": "uses @list",
        "ex:list": {"@list": [1, 2]},
        "securityDefinitions": {"nosec": {"scheme": "nosec"}},
        "security": "nosec",
    },
]


@pytest.mark.parametrize(
    "document",
    [
        json.loads(path.read_text())
        for path in [*REAL_TD_FILES, FIXTURES / "weather-agent.td.json", FIXTURES / "seed-tool.td.json"]
    ]
    + SYNTHETIC,
    ids=lambda document: str(document.get("id") or document.get("title")),
)
def test_compiled_contexts_give_oxigraphs_rdf(document: dict[str, Any]) -> None:
    """The fast converter (or its fallback) yields exactly what oxigraph's JSON-LD processor yields."""
    fast = converter.convert(document)
    general = converter.convert_general(document)
    assert fast.error is None
    assert general.error is None
    assert canonical(fast.ntriples) == canonical(general.ntriples)


@pytest.mark.parametrize(
    "context",
    [
        ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
        # ``registration`` made an LMOS member: its reading is not the document's without it, so none is carried.
        [
            "https://www.w3.org/2022/wot/td/v1.1",
            {"lmos": "https://eclipse.dev/lmos/protocol/v1", "registration": "lmos:metadata"},
        ],
    ],
)
def test_a_reading_carried_to_the_document_without_a_member_is_the_one_reading_it_gives(context: Any) -> None:
    document = {
        "@context": context,
        "id": "urn:test:carried",
        "@type": "lmos:Agent",
        "title": "Carried",
        "lmos:metadata": {"lmos:vendor": {"lmos:name": "Acme"}},
        "registration": {"ttl": 60},
    }
    stored = {key: value for key, value in document.items() if key != "registration"}
    read_alone = readings.lmos_normalised(stored)
    with readings.readings_kept():
        read = readings.lmos_normalised(document)
        readings.reading_carried(document, stored, "registration")
        with readings.readings_kept():  # a nested one keeps its readings in the outer one's
            assert readings.lmos_normalised(document) is read
            assert readings.lmos_normalised(stored) == read_alone
    assert "registration" in read or "lmos:metadata" in read


def test_nothing_is_carried_outside_readings_kept_or_from_a_document_not_read() -> None:
    document = {"@context": "https://www.w3.org/2022/wot/td/v1.1", "id": "urn:test:x", "registration": {}}
    stored = {"@context": document["@context"], "id": "urn:test:x"}
    readings.reading_carried(document, stored, "registration")  # no readings kept: nothing happens
    with readings.readings_kept():
        readings.reading_carried(document, stored, "registration")
        assert readings._kept_reading(readings._kept.get(), stored) is None
