"""A need's full-text candidates are picked by how selective its words are, not by title: the best match is found
wherever its title sorts, and a word in every description neither empties the answer nor makes it read the
catalogue (a generated catalogue of 5,000 descriptions, statistics refreshed as after an import)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy import text

from registry.discovery.text import PREFIX_FROM, any_words_query, words
from registry.store.catalog import CatalogStore, Filters, search_query
from registry.store.catalog.search import RANK_CANDIDATES
from registry.store.database import Database
from registry.store.statistics import refresh_statistics
from tests.support.catalogue import generated_catalogue, opened

SIZE = 5_000
BEST = "urn:test:need:best"
_BEST_DESCRIPTION = text(
    """
    INSERT INTO descriptions (id, document_text, anonymous, created, modified, expires, ttl, last_seen, revision)
    VALUES (:id, '{}', false, now(), now(), NULL, NULL, now(), 1)
    """
)
#: Its title sorts after every generated one; it names Berlin, which no other description does.
_BEST_SUMMARY = text(
    """
    INSERT INTO thing_summaries (thing_id, kind, title, title_key, types, summary, search)
    VALUES (:id, 'agent', 'Zeppelin Berlin Weather', 'zeppelin berlin weather', ARRAY['Thing'], '{}'::jsonb,
            setweight(to_tsvector('english', 'Zeppelin Berlin Weather'), 'A')
            || setweight(to_tsvector('english', 'A service forecasting the weather of Berlin'), 'B'))
    """
)

REPEATED = "urn:test:need:repeated"
#: A title of "service" over and over, and Zeppelin once in its text.
_REPEATED_SUMMARY = text(
    """
    INSERT INTO thing_summaries (thing_id, kind, title, title_key, types, summary, search)
    VALUES (:id, 'agent', 'Service Service Service', 'service service service', ARRAY['Thing'], '{}'::jsonb,
            setweight(to_tsvector('english', 'Service Service Service Service'), 'A')
            || setweight(to_tsvector('english', 'A service for a zeppelin'), 'D'))
    """
)


@pytest.fixture(scope="module")
def catalogue_url(postgres_admin_url: str) -> Iterator[str]:
    with generated_catalogue(postgres_admin_url, SIZE) as url:
        yield url


@pytest.fixture(scope="module")
async def catalogue(catalogue_url: str) -> AsyncIterator[Database]:
    async with opened(catalogue_url) as database:
        async with database.transaction() as tx:
            await tx.execute(_BEST_DESCRIPTION, id=BEST)
            await tx.execute(_BEST_SUMMARY, id=BEST)
        await refresh_statistics(database)
        yield database


def need(words_of_need: str) -> Filters:
    return Filters(text=words_of_need, text_match="any", text_query=any_words_query(words_of_need))


async def matches(database: Database, words_of_need: str, limit: int = 50) -> list[str]:
    store = CatalogStore(database)
    rows = await store.need_matches(need(words_of_need), words(words_of_need), PREFIX_FROM, limit)
    return [row["thing_id"] for row in rows]


async def test_the_best_match_is_found_beyond_the_first_matches_by_title(catalogue: Database) -> None:
    """Every description matches "service": ranking the first 1,000 matches by title would leave out the one
    that names Berlin and weather in its title, which sorts last."""
    first_by_title = await catalogue.fetch(search_query(need("weather service in Berlin"), None, "relevance", 50, None))
    assert SIZE > RANK_CANDIDATES
    assert BEST not in [row["thing_id"] for row in first_by_title]
    found = await matches(catalogue, "weather service in Berlin")
    assert found[0] == BEST
    assert len(found) == 50  # the other weather descriptions follow


async def test_a_rare_word_outranks_a_common_word_named_often(catalogue: Database) -> None:
    """Words weigh by their rarity: the description that names Zeppelin once (in its title) ranks above one whose
    title names "service", which every description holds, over and over."""
    async with catalogue.transaction() as tx:
        await tx.execute(_BEST_DESCRIPTION, id=REPEATED)
        await tx.execute(_REPEATED_SUMMARY, id=REPEATED)
    try:
        found = await matches(catalogue, "zeppelin service", limit=5)
        assert found[:2] == [BEST, REPEATED]
        rows = await CatalogStore(catalogue).need_matches(need("zeppelin service"), ["zeppelin", "service"], 4, 2)
        assert rows[0]["sort_key"] > 2 * rows[1]["sort_key"]
    finally:
        async with catalogue.transaction() as tx:
            await tx.execute(text("DELETE FROM descriptions WHERE id = :id"), id=REPEATED)


@pytest.mark.parametrize("words_of_need", ["service", "a service", "service qqqzzz", "services answering"])
async def test_a_word_in_every_description_still_answers(catalogue: Database, words_of_need: str) -> None:
    found = await matches(catalogue, words_of_need, limit=20)
    assert len(found) == 20
    assert len(set(found)) == 20


async def test_words_that_match_nothing_answer_nothing(catalogue: Database) -> None:
    assert await matches(catalogue, "qqqzzz xxyyzz") == []
    assert await matches(catalogue, "the of and") == []  # stop words only


async def test_a_word_in_every_description_still_answers_within_filters(catalogue: Database) -> None:
    """With a filter the common words' matches are read from the index (intersected with the filter's), not
    sampled: a sample would hold few of the rows the filter keeps."""
    store = CatalogStore(catalogue)
    filters = dataclasses.replace(need("service"), kind="tool")
    rows = await store.need_matches(filters, ["service"], PREFIX_FROM, 20)
    assert len(rows) == 20


#: The same word once among what a description's products are known for (class D) and once in another's
#: capabilities (class C).
_CLASSED_SUMMARY = """
    INSERT INTO thing_summaries (thing_id, kind, title, title_key, types, summary, search)
    VALUES (:id, 'tool', 'Plain Tool', 'plain tool', ARRAY['Thing'], '{{}}'::jsonb,
            setweight(to_tsvector('english', 'Plain Tool'), 'A')
            || setweight(to_tsvector('english', 'quokkaflux telemetry'), '{weight}'))
"""


async def test_what_products_are_known_for_counts_above_capability_words(catalogue: Database) -> None:
    """The lowest class holds the words of tasks a need uses (the gazetteer's purposes): a need's ranking weighs it
    0.25, above a capability's words (0.2), where PostgreSQL's default weighs it 0.1."""
    known_for, capability = "urn:test:need:known-for", "urn:test:need:capability"
    async with catalogue.transaction() as tx:
        for thing_id, weight in ((known_for, "D"), (capability, "C")):
            await tx.execute(_BEST_DESCRIPTION, id=thing_id)
            await tx.execute(text(_CLASSED_SUMMARY.format(weight=weight)), id=thing_id)
    assert await matches(catalogue, "quokkaflux") == [known_for, capability]
