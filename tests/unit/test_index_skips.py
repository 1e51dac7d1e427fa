"""The SPARQL index leaves out a description whose RDF cannot be loaded, on every path (bulk load, one at a time,
put back, build), keeps the others, and remembers what it left out."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph as ox

from registry.semantic.graphs import graph_name
from registry.sparql.worker.index import BULK_FROM, RdfIndex

BAD_ID = "urn:test:bad"
#: What an old converter wrote for the id ``urn:test:bad%zz``: no strict parser reads it.
BAD_RDF = '<urn:test:bad%zz> <urn:p> "x" .\n'


def rdf(thing_id: str, title: str = "t") -> str:
    return f'<{thing_id}> <urn:p> "{title}" .\n<{thing_id}> <urn:q> _:b0 .\n_:b0 <urn:r> "1" .\n'


def graphs(index: RdfIndex) -> set[str]:
    return {graph.value for graph in index.store.named_graphs() if isinstance(graph, ox.NamedNode)}


def test_a_bulk_load_leaves_out_only_the_description_that_does_not_parse(tmp_path: Path) -> None:
    index = RdfIndex(tmp_path)
    rows = [(f"urn:test:{number}", rdf(f"urn:test:{number}")) for number in range(BULK_FROM + 20)]
    index.replace([*rows[:50], (BAD_ID, BAD_RDF), *rows[50:]])
    assert graphs(index) == {thing_id for thing_id, _ in rows}
    assert index.descriptions == len(rows)
    assert list(index.skipped.reasons) == [BAD_ID]
    assert "percent encoding" in index.skipped.reasons[BAD_ID]
    assert index.skipped.total == 1


def test_one_at_a_time_the_same_description_is_left_out_the_same_way(tmp_path: Path) -> None:
    index = RdfIndex(tmp_path)
    index.replace([("urn:test:1", rdf("urn:test:1")), (BAD_ID, BAD_RDF), ("urn:test:2", rdf("urn:test:2"))])
    assert graphs(index) == {"urn:test:1", "urn:test:2"}
    assert index.descriptions == 2
    assert BAD_ID in index.skipped


def test_a_replacement_that_does_not_parse_takes_the_description_out(tmp_path: Path) -> None:
    """What the graph held is no longer what the directory serves."""
    index = RdfIndex(tmp_path)
    index.replace([(BAD_ID, rdf(BAD_ID))])
    assert graphs(index) == {BAD_ID}
    index.replace([(BAD_ID, BAD_RDF)])
    assert graphs(index) == set()
    assert index.descriptions == 0
    assert BAD_ID in index.skipped


def test_a_description_left_out_leaves_the_set_once_taken_or_gone(tmp_path: Path) -> None:
    index = RdfIndex(tmp_path)
    index.replace([(BAD_ID, BAD_RDF), ("urn:test:gone%zz", BAD_RDF)])
    assert len(index.skipped) == 2
    index.replace([(BAD_ID, rdf(BAD_ID))])  # registered again, loadable
    index.remove(["urn:test:gone%zz"])
    assert len(index.skipped) == 0
    assert graphs(index) == {BAD_ID}
    assert index.skipped.total == 2


def test_a_build_leaves_out_what_does_not_parse(tmp_path: Path) -> None:
    index = RdfIndex(tmp_path)
    index.load([("urn:test:1", rdf("urn:test:1")), (BAD_ID, BAD_RDF), ("urn:test:2", rdf("urn:test:2"))])
    assert graphs(index) == {"urn:test:1", "urn:test:2"}
    assert index.descriptions == 2
    assert BAD_ID in index.skipped


def test_what_is_left_out_is_remembered_when_the_index_is_opened_again(tmp_path: Path) -> None:
    index = RdfIndex.open(tmp_path, "db/1")
    index.replace([("urn:test:1", rdf("urn:test:1")), (BAD_ID, BAD_RDF)])
    index.remember("db/1", 7)
    index.close()
    reopened = RdfIndex.open(tmp_path, "db/1")
    assert reopened.state is not None
    assert reopened.state.position == 7
    assert BAD_ID in reopened.skipped
    assert graph_name("urn:test:1") in set(reopened.store.named_graphs())
    reopened.close()


class _RefusingStore:
    """The index's store, refusing every bulk load and the single load of one description."""

    def __init__(self, store: ox.Store, refused: str) -> None:
        self._store = store
        self._refused = refused

    def bulk_load(self, data: bytes, format: ox.RdfFormat) -> None:
        raise SyntaxError("refused as one batch")

    def load(self, data: str, format: ox.RdfFormat) -> None:
        if self._refused in data:
            raise ValueError("refused on its own")
        self._store.load(data, format)

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)


def test_what_parses_alone_but_not_in_one_load_is_loaded_one_by_one(tmp_path: Path) -> None:
    index = RdfIndex(tmp_path)
    store = index.store
    index.store = _RefusingStore(store, "urn:test:2")  # type: ignore[assignment]
    index.load([(f"urn:test:{number}", rdf(f"urn:test:{number}")) for number in (1, 2, 3)] + [(BAD_ID, BAD_RDF)])
    index.store = store
    assert graphs(index) == {"urn:test:1", "urn:test:3"}
    assert index.descriptions == 2
    assert list(index.skipped.reasons) == [BAD_ID, "urn:test:2"]
    assert "refused on its own" in index.skipped.reasons["urn:test:2"]
