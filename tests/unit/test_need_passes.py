"""The passes that pick a need's full-text candidates: selective words first, common words only to top up
(registry/store/catalog/words.py)."""

from __future__ import annotations

from typing import Any

from registry.discovery.text import PREFIX_FROM
from registry.store.catalog.words import (
    SAMPLE_SURPLUS,
    SELECTIVE_ROWS,
    TOP_UP_ROWS,
    Frequencies,
    WordStatistics,
    bounded,
    passes,
    rarity,
    weights,
)

#: As pg_stats gives them: lexemes in any order, their shares, then the least and greatest share and empty rows.
STATS = Frequencies.of(
    ["servic", "weather", "weathervan", "answer", "berlin"],
    [0.9, 0.15, 0.01, 0.5, 0.0005, 0.0005, 0.9, 0.0],
    100_000,
)


def test_a_share_is_read_for_a_lexeme_or_summed_over_those_it_starts() -> None:
    assert STATS.share("answer", prefix=False) == 0.5
    assert STATS.share("weather", prefix=False) == 0.15
    assert STATS.share("weather", prefix=True) == 0.16
    assert STATS.share("serv", prefix=True) == 0.9
    assert STATS.share("paris", prefix=True) is None
    assert STATS.least == 0.0005


def test_shares_without_statistics_leave_every_word_selective() -> None:
    empty = Frequencies.of(None, None, None)
    assert empty.rows == 0.0
    plan = passes([("weather", "weather"), ("service", "servic")], empty, PREFIX_FROM)
    assert plan.selective == "weather:* | service:*"
    assert plan.common is None


def test_rare_and_unlisted_words_are_selective_and_common_ones_only_top_up() -> None:
    terms = [("weather", "weather"), ("in", None), ("berlin", "berlin"), ("service", "servic"), ("paris", "pari")]
    plan = passes(terms, STATS, PREFIX_FROM)
    assert plan.selective == "paris:* | berlin:*"  # unlisted first, then from the least frequent up
    assert plan.common == "weather:* | service:*"


def test_words_join_the_selective_pass_while_their_matches_fit() -> None:
    rows = 5_000  # weather: 750 rows, fits; answer: 2,500 more, does not
    frequencies = Frequencies(STATS.lexemes, STATS.shares, STATS.least, rows)
    plan = passes([("answer", "answer"), ("weather", "weather")], frequencies, PREFIX_FROM)
    assert plan.selective == "weather:*"
    assert plan.common == "answer:*"


def test_a_catalogue_within_the_selective_rows_has_one_pass() -> None:
    small = Frequencies(STATS.lexemes, STATS.shares, STATS.least, SELECTIVE_ROWS)
    plan = passes([("service", "servic"), ("answer", "answer")], small, PREFIX_FROM)
    assert plan.selective == "service:* | answer:*"
    assert plan.common is None


def test_short_words_match_whole() -> None:
    plan = passes([("ai", "ai"), ("api", "api")], Frequencies(rows=10.0), PREFIX_FROM)
    assert plan.selective == "ai | api"


def test_words_in_most_descriptions_are_sampled_and_others_read_from_the_index() -> None:
    every = passes([("service", "servic")], Frequencies(STATS.lexemes, STATS.shares, STATS.least, 1e6), PREFIX_FROM)
    assert every.selective is None
    assert every.sample == 100.0 * SAMPLE_SURPLUS * TOP_UP_ROWS / (0.9 * 1e6)
    weather = Frequencies(STATS.lexemes, STATS.shares, STATS.least, 20_000)  # 3,200 matches: their entries
    assert passes([("weather", "weather")], weather, PREFIX_FROM).sample is None


class _Executor:
    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    async def fetch(self, query: Any, /, **values: Any) -> list[tuple[str | None]]:
        self.asked.append(values["words"])
        return [(None if word == "the" else word[:5],) for word in values["words"]]


async def test_lexemes_are_asked_once_per_word() -> None:
    statistics, executor = WordStatistics(), _Executor()
    assert await statistics.lexemes(executor, ["weather", "the"]) == ["weath", None]  # type: ignore[arg-type]
    assert await statistics.lexemes(executor, ["the", "berlin", "weather"]) == [None, "berli", "weath"]  # type: ignore[arg-type]
    assert executor.asked == [["weather", "the"], ["berlin"]]


def test_a_word_weighs_less_the_more_descriptions_hold_it() -> None:
    assert rarity(None, STATS.least) == 1.0  # rarer than every listed word
    assert rarity(STATS.least, STATS.least) == 1.0
    assert rarity(1.0, STATS.least) == 0.0  # in every description: says nothing of any
    shares = [0.0005, 0.01, 0.15, 0.5, 0.9]
    rarities = [rarity(share, STATS.least) for share in shares]
    assert rarities == sorted(rarities, reverse=True)
    assert rarities[-1] < 0.001 < rarities[1]


def test_without_statistics_every_word_weighs_alike() -> None:
    assert rarity(0.3, 0.0) == 1.0
    empty = Frequencies.of(None, None, None)
    assert weights([("weather", "weather"), ("service", "servic")], empty, PREFIX_FROM) == (
        ("weather:*", 1.0),
        ("service:*", 1.0),
    )


def test_each_word_of_a_need_is_weighed_as_it_is_matched() -> None:
    """Stop words are left out; a prefix weighs as the share of the lexemes it starts."""
    terms = [("the", None), ("weather", "weather"), ("in", None), ("berlin", "berlin"), ("service", "servic")]
    rated = dict(weights(terms, STATS, PREFIX_FROM))
    assert list(rated) == ["weather:*", "berlin:*", "service:*"]
    assert rated["weather:*"] == rarity(0.16, STATS.least)
    assert rated["berlin:*"] == 1.0
    assert rated["service:*"] < rated["weather:*"] < rated["berlin:*"]


def test_a_words_share_for_its_weight_is_at_most_its_share_of_owners() -> None:
    """min(share of descriptions, share of owners); a word whose owners were not counted keeps its share."""
    assert bounded(0.15, 0.02) == 0.02  # one owner of fifty registered most of the descriptions holding it
    assert bounded(0.15, 0.6) == 0.15  # held by many owners: its share of descriptions
    assert bounded(0.15, None) == 0.15
    assert bounded(0.15, 1.0) == 0.15  # a directory of one owner: every owner share is 1


def test_the_owners_bound_the_weights_and_leave_the_passes() -> None:
    """The passes follow the shares of descriptions (what reading a word's matches costs); the weights the bounded
    shares, summed over the lexemes a prefix starts as the shares are."""
    owned = Frequencies.of(
        ["servic", "weather", "weathervan", "answer", "berlin"],
        [0.9, 0.15, 0.01, 0.5, 0.0005, 0.0005, 0.9, 0.0],
        100_000,
        ["weather", "servic", "weathervan", "answer"],
        [0.02, 1.0, 0.5, 0.25],
    )
    assert owned.share("weather", prefix=True) == STATS.share("weather", prefix=True) == 0.16
    assert owned.weighed_share("weather", prefix=False) == 0.02
    assert owned.weighed_share("weather", prefix=True) == 0.03
    assert owned.weighed_share("answer", prefix=False) == 0.25
    assert owned.weighed_share("berlin", prefix=False) == 0.0005  # listed by pg_stats after the owners' count
    assert owned.weighed_share("zeppelin", prefix=False) is None
    terms = [("weather", "weather"), ("answering", "answer"), ("service", "servic")]
    assert passes(terms, owned, PREFIX_FROM) == passes(terms, STATS, PREFIX_FROM)
    rated, plain = dict(weights(terms, owned, PREFIX_FROM)), dict(weights(terms, STATS, PREFIX_FROM))
    assert rated["weather:*"] == rarity(0.03, STATS.least) > plain["weather:*"]
    assert rated["answering:*"] == rarity(0.25, STATS.least) > plain["answering:*"]
    assert rated["service:*"] == plain["service:*"]


def test_one_owner_weighs_words_as_their_share_of_descriptions() -> None:
    lexemes = ["servic", "weather", "weathervan", "answer", "berlin"]
    alone = Frequencies.of(lexemes, [0.9, 0.15, 0.01, 0.5, 0.0005, 0.0005, 0.9, 0.0], 100_000, lexemes, [1.0] * 5)
    terms = [("weather", "weather"), ("answer", "answer"), ("service", "servic"), ("berlin", "berlin")]
    assert weights(terms, alone, PREFIX_FROM) == weights(terms, STATS, PREFIX_FROM)


class _StatisticsRows:
    """pg_stats as the statistics read it, counting the reads."""

    def __init__(self) -> None:
        self.reads = 0

    async def fetchrow(self, query: Any, /, **values: Any) -> dict[str, Any]:
        self.reads += 1
        return {"lexemes": None, "shares": None, "rows": 10.0, "owner_lexemes": None, "owner_shares": None}


async def test_the_statistics_refresh_of_the_summaries_has_their_frequencies_read_again(monkeypatch: Any) -> None:
    """The frequencies are kept for a minute, except after the directory's own refresh analysed the words."""
    from registry import app

    statistics, rows = WordStatistics(), _StatisticsRows()
    await statistics.frequencies(rows)  # type: ignore[arg-type]
    refreshed: list[list[str]] = [["descriptions"], ["thing_summaries", "changes"], ["word_owner_shares"]]

    async def refresh(database: Any) -> list[str]:
        return refreshed.pop(0)

    async def compact(database: Any) -> None:
        return None

    monkeypatch.setattr(app, "refresh_stale_statistics", refresh)
    monkeypatch.setattr(app, "compact_counts", compact)
    await app._refresh_statistics(None, statistics)  # type: ignore[arg-type]
    await statistics.frequencies(rows)  # type: ignore[arg-type]
    assert rows.reads == 1  # another table's refresh: still the frequencies read before
    await app._refresh_statistics(None, statistics)  # type: ignore[arg-type]
    await statistics.frequencies(rows)  # type: ignore[arg-type]
    assert rows.reads == 2
    await app._refresh_statistics(None, statistics)  # type: ignore[arg-type]  # the words' owners counted anew
    await statistics.frequencies(rows)  # type: ignore[arg-type]
    assert rows.reads == 3
