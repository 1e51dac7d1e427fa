"""The change feed delivers strictly in sequence order and waits (a bounded time) for missing sequences."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

import msgspec

from registry.events.feed import ChangeFeed
from registry.events.history import apply_change
from registry.events.hub import encode_event
from registry.store.changes import Change
from registry.store.database import Database

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def change(seq: int, change_type: str = "thing_updated", diff: Any = None) -> Change:
    return Change(seq, "urn:x", change_type, None if diff is None else msgspec.json.encode(diff).decode(), NOW)


def feed(position: int, gap_timeout: float) -> ChangeFeed:
    instance = ChangeFeed(cast(Database, None), gap_timeout=gap_timeout)
    instance.position = position
    return instance


def test_contiguous_changes_pass() -> None:
    assert [c.seq for c in feed(3, 10)._in_order([change(4), change(5)])] == [4, 5]


def test_a_gap_holds_back_later_changes_until_it_times_out() -> None:
    waiting = feed(3, 10)
    assert [c.seq for c in waiting._in_order([change(4), change(6), change(7)])] == [4]
    given_up = feed(3, 0)
    assert [c.seq for c in given_up._in_order([change(5), change(6)])] == [5, 6]
    assert list(given_up._missing) == [4]  # still asked for: delivered late should it commit


def test_states_rebuilt_from_the_log_do_not_share_objects() -> None:
    created = apply_change(None, "thing_created", {"id": "urn:x", "actions": {"a": {}, "b": {}}})
    updated = apply_change(created, "thing_updated", {"actions": {"a": None}})
    assert created == {"id": "urn:x", "actions": {"a": {}, "b": {}}}
    assert updated == {"id": "urn:x", "actions": {"b": {}}}
    assert apply_change(updated, "thing_deleted", None) is None


def test_event_frames() -> None:
    patch = {"id": "urn:x", "title": "New"}
    assert encode_event(change(9, diff=patch), False) == b'event: thing_updated\nid: 9\ndata: {"id":"urn:x"}\n\n'
    assert encode_event(change(9, diff=patch), True).endswith(b'data: {"id":"urn:x","title":"New"}\n\n')
    deleted = encode_event(change(10, "thing_deleted"), True)
    assert deleted == b'event: thing_deleted\nid: 10\ndata: {"id":"urn:x"}\n\n'
    created = encode_event(change(11, "thing_created", {"id": "urn:x", "title": "T"}), True)
    assert b'"registration":{"created":"2026-01-01T00:00:00.000+00:00"' in created
