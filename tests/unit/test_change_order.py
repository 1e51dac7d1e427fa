"""The change feed delivers in sequence order while it can; a change committed late comes after later ones, with
event ids that name the position of the stream (registry/events/positions.py)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, cast

import msgspec
import pytest

from registry.events.feed import ChangeFeed
from registry.events.history import apply_change
from registry.events.hub import encode_event
from registry.events.positions import MAX_RANGES, Position, parse_event_id
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


def test_a_change_committed_late_is_delivered_after_later_ones_with_positions_naming_what_is_pending() -> None:
    skipping = feed(3, 0)
    ready = skipping._in_order([change(6), change(7)])
    delivered = skipping._positioned([], ready)
    # 4 and 5 are pending: every event id says so, and resuming from one gets them when they commit.
    assert [c.event_id for c in delivered] == ["6/6/4-5", "7/7/4-5"]
    assert skipping.cursor == Position(7, ((4, 5),))
    assert skipping.settled == 3
    late = skipping._positioned([change(5)], [])
    assert [c.event_id for c in late] == ["5/7/4"]
    assert skipping.position == 7
    assert skipping.settled == 3
    assert skipping.cursor.covers(5)
    assert not skipping.cursor.covers(4)


def test_without_pending_sequences_events_keep_plain_ids() -> None:
    in_order = feed(3, 10)
    delivered = in_order._positioned([], in_order._in_order([change(4), change(5)]))
    assert [c.event_id for c in delivered] == [None, None]
    assert encode_event(delivered[0], False).startswith(b"event: thing_updated\nid: 4\n")


def test_event_ids_round_trip_and_refuse_what_the_directory_never_sends() -> None:
    position = Position.of(20, [3, 4, 5, 9])
    assert position.event_id(20) == "20/20/3-5,9"
    assert parse_event_id("4/20/3,5,9") == (4, Position(20, ((3, 3), (5, 5), (9, 9))))
    assert parse_event_id("17") == (17, Position(17))
    assert parse_event_id("5/20/") == (5, Position(20))
    assert position.without(4) == Position(20, ((3, 3), (5, 5), (9, 9)))
    assert position.below(5) == Position(5, ((3, 4),))
    for wrong in ("-1", "a", "5/20/21", "5/20/9,3", "5/20/3-1", "1/2/3/4", "5/20/" + ",".join(["1"] * 70)):
        with pytest.raises(ValueError, match=re.escape(wrong)):
            parse_event_id(wrong)


def test_an_id_with_more_ranges_than_it_may_list_claims_more_pending_never_fewer() -> None:
    scattered = list(range(0, 2 * (MAX_RANGES + 10), 2))
    position = Position.of(1000, scattered)
    assert len(position.pending) == MAX_RANGES
    assert all(not position.covers(seq) for seq in scattered)
    _, parsed = parse_event_id(position.event_id(1000))
    assert parsed == position
