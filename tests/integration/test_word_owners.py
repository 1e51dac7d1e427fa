"""One party cannot skew the others' need rankings through word rarity: a word's share for its rarity weight is at
most its share of the owners holding it (registry/store/statistics.py counts them after ANALYZE,
registry/store/catalog/words.py reads them with pg_stats). Parties A..E and 195 others register two descriptions
each, A's first one names Zeppelin in its title; then party F registers 400 descriptions naming Zeppelin."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy import text

from registry.discovery.text import PREFIX_FROM, any_words_query, words
from registry.store.catalog import CatalogStore, Filters
from registry.store.catalog.words import WordStatistics, rarity
from registry.store.database import Database
from registry.store.statistics import WORD_OWNERS, count_word_owners, refresh_stale_statistics, refresh_statistics
from tests.support.catalogue import opened
from tests.support.servers import fresh_database

PARTIES = 200
FLOOD = 400
A_ZEPPELIN = "urn:test:owners:p0:1"
#: Two descriptions per party p (owner key:p, in one of three tenants), each with words of its own; parties from
#: 100 up name a gadget in their first; party 0 (A) names Zeppelin in its first title. Six descriptions registered
#: with authentication off (no owner, in two tenants) count as one owner.
_PARTIES = text(
    """
    WITH rows AS (
        SELECT 'urn:test:owners:p' || party || ':' || number AS id, 'key:p' || party AS owner,
               'tenant' || (party % 3) AS tenant,
               CASE WHEN party = 0 AND number = 1 THEN 'Zeppelin tracker' ELSE 'Helper ' || party END AS title,
               CASE WHEN party >= 100 AND number = 1 THEN 'a gadget' ELSE 'quux' || party || 'x' || number END
                   AS body
        FROM generate_series(0, :parties - 1) AS party, generate_series(1, 2) AS number
        UNION ALL
        SELECT 'urn:test:owners:import:' || number, NULL, CASE WHEN number % 2 = 0 THEN 'tenant1' END,
               'Imported ' || number, 'frob' || number
        FROM generate_series(1, 6) AS number
    ),
    stored AS (
        INSERT INTO descriptions (id, document_text, anonymous, created, modified, last_seen, revision, owner, tenant)
        SELECT id, '{}', false, now(), now(), now(), 1, owner, tenant FROM rows
    )
    INSERT INTO thing_summaries (thing_id, kind, title, title_key, types, summary, search)
    SELECT id, 'agent', title, lower(title), ARRAY['Thing'], '{}'::jsonb,
           setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', body), 'D')
    FROM rows
    """
)
#: Party F's descriptions, each naming Zeppelin (in its text, not its title) beside words of its own.
_FLOOD = text(
    """
    WITH rows AS (
        SELECT 'urn:test:owners:f:' || number AS id, 'Flood ' || number AS title,
               'zeppelin zeppelin blimp' || number AS body
        FROM generate_series(1, :flood) AS number
    ),
    stored AS (
        INSERT INTO descriptions (id, document_text, anonymous, created, modified, last_seen, revision, owner, tenant)
        SELECT id, '{}', false, now(), now(), now(), 1, 'key:f', 'tenant0' FROM rows
    )
    INSERT INTO thing_summaries (thing_id, kind, title, title_key, types, summary, search)
    SELECT id, 'agent', title, lower(title), ARRAY['Thing'], '{}'::jsonb,
           setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', body), 'D')
    FROM rows
    """
)
NEED = "zeppelin gadget"


@pytest.fixture(scope="module")
def url(postgres_admin_url: str) -> Iterator[str]:
    with fresh_database(postgres_admin_url) as fresh:
        yield fresh


@pytest.fixture(scope="module")
async def parties(url: str) -> AsyncIterator[Database]:
    async with opened(url) as database:
        await database.execute(_PARTIES, parties=PARTIES)
        await refresh_statistics(database, ("descriptions", "thing_summaries"))
        yield database


async def ranked(database: Database) -> list[str]:
    filters = Filters(text=NEED, text_match="any", text_query=any_words_query(NEED))
    rows = await CatalogStore(database).need_matches(filters, words(NEED), PREFIX_FROM, 50)
    return [row["thing_id"] for row in rows]


async def zeppelin(database: Database) -> tuple[float, float, float]:
    """Zeppelin's share of descriptions, the share its weight is taken from, and that weight."""
    frequencies = await WordStatistics().frequencies(database)
    share, weighed = frequencies.share("zeppelin", False), frequencies.weighed_share("zeppelin", False)
    assert share is not None
    assert weighed is not None
    return share, weighed, rarity(weighed, frequencies.least)


async def test_a_party_registering_many_descriptions_moves_a_word_by_one_owner(parties: Database) -> None:
    stored = await parties.fetchrow(text("SELECT owners, sampled FROM word_owner_shares"))
    assert stored is not None
    assert (stored["owners"], stored["sampled"]) == (PARTIES + 1, 2 * PARTIES + 6)
    share, weighed, weight = await zeppelin(parties)
    assert weighed == share  # held by one description of one owner in 201: its share of descriptions
    assert weight == 1.0
    assert (await ranked(parties))[0] == A_ZEPPELIN

    await parties.execute(_FLOOD, flood=FLOOD)
    await refresh_statistics(parties, ("descriptions", "thing_summaries"))
    owners = PARTIES + 2  # F among them
    share, weighed, weight = await zeppelin(parties)
    assert share > 0.45  # F's descriptions are half the catalogue
    assert weighed == pytest.approx(2 / owners)  # A and F
    assert weighed <= 1 / (PARTIES + 1) + 1 / owners + 1e-9  # one owner's worth above A's alone
    frequencies = await WordStatistics().frequencies(parties)
    unbounded = rarity(share, frequencies.least)
    assert unbounded < 1e-6 < 0.01 < weight
    assert (await ranked(parties))[0] == A_ZEPPELIN  # above the gadgets, as before F came

    await parties.execute(text("DELETE FROM word_owner_shares"))  # the rarity of descriptions alone
    try:
        assert A_ZEPPELIN not in await ranked(parties)  # below the hundred gadgets
    finally:
        await count_word_owners(parties)


async def test_autovacuum_analysing_the_summaries_first_has_the_owners_counted_again(parties: Database) -> None:
    """The directory's refresh finds the summaries fresh after autovacuum's ANALYZE; it counts the owners anew.

    Other connections report the rows they changed to the statistics up to 10 s after their transactions end, so
    the summaries may look changed again after the test's ANALYZE: then the refresh analyses them itself, and the
    test waits and tries again until it finds them fresh."""
    for _ in range(20):
        await parties.execute(text("ANALYZE thing_summaries"))  # as autovacuum would, without the count
        await parties.execute(text("UPDATE word_owner_shares SET counted = counted - interval '1 hour'"))
        refreshed = await refresh_stale_statistics(parties)
        if "thing_summaries" not in refreshed:
            break
        await asyncio.sleep(1)
    assert "thing_summaries" not in refreshed
    assert WORD_OWNERS in refreshed
    assert WORD_OWNERS not in await refresh_stale_statistics(parties)
