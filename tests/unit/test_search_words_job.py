"""The full-text words refresh job without a database: the words it computes and what ``/readyz`` shows of it."""

from __future__ import annotations

from typing import Any

import msgspec

from registry.descriptions.gazetteer import gazetteer
from registry.descriptions.summary import SEARCH_TEXTS, summarise
from registry.errors import DatabaseUnavailable
from registry.projections.search_words import SearchWordsRefresh, texts_of
from registry.store.search_words import Stale


def test_the_version_names_the_gazetteer() -> None:
    assert SEARCH_TEXTS.endswith(f"+gazetteer-{gazetteer().version}")


def test_the_words_are_those_a_write_gives_and_an_unreadable_summary_is_left() -> None:
    summary = summarise({"title": "Strava", "description": "Workouts", "@type": "Thing"})
    stored: dict[str, Any] = {**msgspec.to_builtins(summary), "lint": [{"code": "x", "message": "y"}]}
    good = Stale("urn:a", msgspec.json.encode(stored).decode())
    bad = Stale("urn:b", '{"title": 3}')
    (refreshed,) = texts_of([good, bad])
    assert refreshed.stale is good
    assert refreshed.texts == summary.search_texts()
    assert "cycling workouts" in refreshed.texts[3]


def test_the_state_for_readyz() -> None:
    job = SearchWordsRefresh(None, version="v")  # type: ignore[arg-type]
    assert job.state() == (True, "not counted yet")
    job.counted, job.total, job.current = True, 10, 4
    assert job.state() == (True, "refreshing: 4 of 10 descriptions' words current (v)")
    job.current = 10
    assert job.state() == (False, "10 of 10 descriptions' words current (v)")
    job.problem = "the database is unreachable"
    assert job.state() == (True, "the full-text words refresh fails (the database is unreachable); 10 of 10 current")


def test_a_failed_round_shows_in_readyz_and_a_bug_by_its_type() -> None:
    job = SearchWordsRefresh(None, version="v")  # type: ignore[arg-type]
    job.counted, job.total, job.current = True, 10, 4
    job._failed(DatabaseUnavailable("the database is unreachable"))
    assert job.state() == (True, "the full-text words refresh fails (the database is unreachable); 4 of 10 current")
    job._failed(KeyError("title"))
    assert job.state() == (True, "the full-text words refresh fails (KeyError: 'title'); 4 of 10 current")
