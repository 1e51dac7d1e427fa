"""The passes that pick a need's full-text candidates: selective words first, common words only to top up
(registry/store/catalog/words.py)."""

from __future__ import annotations

from registry.discovery.text import PREFIX_FROM
from registry.store.catalog.words import SELECTIVE_ROWS, Frequencies, passes

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
