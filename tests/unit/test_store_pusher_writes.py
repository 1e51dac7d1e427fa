"""What the pusher sends the external store for a batch of changes: one update with the drops, the inserts of
what parses, and the position marker when it moves or anything is sent; nothing when there is nothing to say."""

from __future__ import annotations

from typing import Any, cast

from registry.semantic.graphs import graph_name
from registry.sparql.store.pusher import StorePusher
from registry.sparql.store.store import StoreState, state_update

BAD = '<urn:bad%zz> <urn:p> "x" .\n'


class _RecordingStore:
    def __init__(self) -> None:
        self.updates: list[str] = []

    async def update(self, operations: str) -> None:
        self.updates.append(operations)


def pusher() -> tuple[StorePusher, _RecordingStore]:
    store = _RecordingStore()
    return StorePusher(cast(Any, None), cast(Any, None), cast(Any, store), "db-1"), store


async def test_one_update_drops_inserts_what_parses_and_moves_the_marker() -> None:
    pushing, store = pusher()
    current = {"urn:a": "<urn:a> <urn:p> _:b .\n", "urn:empty": "", "urn:bad": BAD, "urn:c": '<urn:c> <urn:p> "1" .\n'}
    await pushing._write(["urn:gone"], current, 7)
    (update,) = store.updates
    assert update.split(" ;\n") == [
        *(f"DROP SILENT GRAPH {graph_name(thing_id)}" for thing_id in ["urn:gone", *current]),
        f"INSERT DATA {{ GRAPH {graph_name('urn:a')} {{ <urn:a> <urn:p> _:d0xb .\n }} }}",
        f'INSERT DATA {{ GRAPH {graph_name("urn:c")} {{ <urn:c> <urn:p> "1" .\n }} }}',
        state_update(StoreState("db-1", 7)),
    ]
    assert pushing.state == StoreState("db-1", 7)
    assert list(pushing.skipped.reasons) == ["urn:bad"]


async def test_the_marker_alone_when_the_position_moves_and_nothing_when_it_stays() -> None:
    pushing, store = pusher()
    pushing.state = StoreState("db-1", 7)
    await pushing._write([], {}, 7)
    await pushing._write([], {}, None)
    assert store.updates == []
    await pushing._write([], {}, 8)
    assert store.updates == [state_update(StoreState("db-1", 8))]
    assert pushing.state == StoreState("db-1", 8)


async def test_without_a_position_the_marker_stays() -> None:
    pushing, store = pusher()
    await pushing._write(["urn:gone"], {"urn:bad": BAD}, None)
    assert store.updates == [f"DROP SILENT GRAPH {graph_name('urn:gone')} ;\nDROP SILENT GRAPH {graph_name('urn:bad')}"]
    assert pushing.state is None
    assert "urn:bad" in pushing.skipped
