"""Query plans at 10⁵ descriptions: every search filter, sort and the listing read a page's worth through indexes,
never the whole catalogue (EXPLAIN ANALYZE on a generated catalogue, statistics refreshed as after an import)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy import delete, text

from bench.catalogue import FLUSH_STATISTICS, generate
from registry.auth.tenancy import EVERYTHING
from registry.discovery.text import PREFIX_FROM, any_words_query, words
from registry.errors import RegistryError
from registry.store.catalog import CatalogStore, Filters, Ranking, search_query
from registry.store.catalog.resolution import offers_values, ranked_statement, ranking_values, versions_statement
from registry.store.catalog.search import need_query, title_chunk
from registry.store.catalog.words import NEED_PLANNER, PASS_ROWS, TOP_UP_ROWS, need_passes
from registry.store.changes import _MISSING, _RANGE
from registry.store.database import SEARCH_PLANNER, Database, Statement, Transaction
from registry.store.servers import ServerQuery, published_versions_statement
from registry.store.statistics import WORD_OWNERS, refresh_stale_statistics
from registry.store.tables import thing_capabilities
from registry.store.things import _LISTING, _PAGE_END
from tests.support.catalogue import generated_catalogue, opened

SIZE = 100_000
#: Rows a page may read from tables, summed over every scan of its plan: a page of 20 must not cost a pass over
#: the catalogue (intersecting two indexes may read a few thousand entries).
BUDGET = SIZE // 10

CASES: dict[str, tuple[Filters, str]] = {
    "no filter, by title": (Filters(), "title"),
    "kind, by title": (Filters(kind="agent"), "title"),
    "vendor, by title": (Filters(vendor="Vendor 7"), "title"),
    "vendor, newest first": (Filters(vendor="Vendor 7"), "modified"),
    "type, by title": (Filters(type="lmos:Tool"), "title"),
    "rare word, by relevance": (Filters(text="topic42"), "relevance"),
    "word in every description, by relevance": (Filters(text="service"), "relevance"),
    "word in every description, by title": (Filters(text="service"), "title"),
    "word in every description, newest first": (Filters(text="service"), "modified"),
    "capability, by title": (Filters(capability="urn:capability:17"), "title"),
    "capability name and vendor, by title": (Filters(capability="capability17", vendor="Vendor 3"), "title"),
}


@pytest.fixture(scope="module")
def catalogue_url(postgres_admin_url: str) -> Iterator[str]:
    """A database of its own holding the generated catalogue (once for the module: a few seconds)."""
    with generated_catalogue(postgres_admin_url, SIZE) as url:
        yield url


@pytest.fixture
async def catalogue(catalogue_url: str) -> AsyncIterator[Database]:
    async with opened(catalogue_url) as database:
        yield database


async def explain(database: Database, query: Any, **values: Any) -> dict[str, Any]:
    statement = query if isinstance(query, Statement) else Statement.of(query)
    async with database.pool.acquire() as connection:
        plan = await connection.fetchval(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + statement.sql, *statement.arguments(values)
        )
    if isinstance(plan, str):  # without the pool's json codec
        plan = json.loads(plan)
    return dict(plan[0]["Plan"])


def scans(node: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(node type, relation, rows read over all loops) of every scan in the plan."""
    found = []
    if "Scan" in node["Node Type"] and node["Node Type"] != "Bitmap Index Scan":  # its heap scan counts
        found.append((node["Node Type"], node.get("Relation Name", ""), node["Actual Rows"] * node["Actual Loops"]))
    for child in node.get("Plans", []):
        found += scans(child)
    return found


def examined(node: dict[str, Any]) -> list[tuple[str, str, int]]:
    """As :func:`scans`, with the rows each scan read and its filter then removed: the rows before a cursor that
    a scan from the start of an index reads and drops show here, where they are not in the rows it returns."""
    found = []
    if "Scan" in node["Node Type"] and node["Node Type"] != "Bitmap Index Scan":
        rows = (
            node["Actual Rows"] + node.get("Rows Removed by Filter", 0) + node.get("Rows Removed by Index Recheck", 0)
        )
        found.append((node["Node Type"], node.get("Relation Name", ""), rows * node["Actual Loops"]))
    for child in node.get("Plans", []):
        found += examined(child)
    return found


def index_scans(node: dict[str, Any]) -> list[tuple[str, int]]:
    """(index name, entries it returned) of every index scan in the plan, bitmap index scans included."""
    found = [(node["Index Name"], node["Actual Rows"] * node["Actual Loops"])] if "Index Name" in node else []
    for child in node.get("Plans", []):
        found += index_scans(child)
    return found


TITLE_CASES = [case for case, (_, sort) in CASES.items() if sort == "title"]


@pytest.mark.parametrize("case", TITLE_CASES)
async def test_title_pages_read_the_descriptions_of_one_chunk(catalogue: Database, case: str) -> None:
    """Sorted by title (for readers of every tenant), the matching summaries are sorted and cut to the page before
    any description is read: one description per row of the page, however many match."""
    filters, _ = CASES[case]
    plan = await explain(catalogue, title_chunk(filters, None, 21, None))
    read = scans(plan)
    assert not [scan for scan in read if scan[0] == "Seq Scan"], read
    assert plan["Actual Rows"] == 21
    assert sum(rows for _, relation, rows in read if relation == "descriptions") == 21, read
    assert sum(rows for _, _, rows in read) <= BUDGET, read


@pytest.mark.parametrize(
    "filters",
    [
        Filters(kind="agent", vendor="Vendor 7", capability="urn:capability:17"),
        # "1" starts the words of 11 of the 25 vendors: 44 % of the catalogue, which a bitmap of its own read whole
        Filters(kind="agent", vendor="1", capability="urn:capability:17"),
    ],
    ids=["one vendor", "a prefix of many vendors"],
)
async def test_kind_vendor_and_capability_are_one_index_scan(catalogue: Database, filters: Filters) -> None:
    """Kind, vendor words and capability are keys of one GIN index: its scan skips to the rows that hold every key,
    so no index hands over more entries than the combination matches (the kind or a vendor prefix alone match
    tens of thousands here)."""
    matching = await catalogue.fetch(search_query(filters, None, "title", 10_000, None))
    plan = await explain(catalogue, title_chunk(filters, None, 21, None))
    used = index_scans(plan)
    assert {name for name, _ in used if name.startswith("ix_thing_summaries")} == {"ix_thing_summaries_filter_keys"}
    assert all(rows <= len(matching) + 21 for _, rows in used), (used, len(matching))


async def test_title_pages_in_chunks_answer_what_one_join_answers(own_database_url: str) -> None:
    """A page read in chunks skips expired descriptions not yet purged, and reads the next chunk when they cut a
    page short: the pages, followed by cursor, are those of the statement that joins every match first."""
    async with opened(own_database_url) as database:
        await generate(database, 3000)
        # Two of every three descriptions expired (not purged): most chunks of a page are cut short.
        await database.execute(
            text("UPDATE descriptions SET expires = now() - interval '1 hour' WHERE revision % 3 <> 0")
        )
        await database.execute(text("ANALYZE"))
        store = CatalogStore(database)
        for filters in (Filters(), Filters(kind="agent", vendor="1"), Filters(capability="urn:capability:17")):
            after = None
            for _ in range(4):
                page = await store.search(filters, "title", 20, after)
                joined = await database.fetch(search_query(filters, None, "title", 20, after))
                expected = [(row["thing_id"], row["sort_key"]) for row in joined[:20]]
                assert [(row["thing_id"], row["sort_key"]) for row in page.rows] == expected
                assert (page.last is not None) == (len(joined) > 20)
                if page.last is None:
                    break
                after = page.last


@pytest.mark.parametrize("case", list(CASES))
async def test_search_pages_read_through_indexes(catalogue: Database, case: str) -> None:
    filters, sort = CASES[case]
    plan = await explain(catalogue, search_query(filters, None, sort, 20, None))
    read = scans(plan)
    assert not [scan for scan in read if scan[0] == "Seq Scan"], read
    assert plan["Actual Rows"] == 21  # a full page and one more: there are more than 20 of each
    assert sum(rows for _, _, rows in read) <= BUDGET, read


async def test_ranking_checks_expiry_for_the_page_only(catalogue: Database) -> None:
    """Ranked by relevance, a word in every description: the first 1,000 matches in title order are ranked from
    their summaries alone, and only the page's descriptions are read, in rank order, to leave out expired ones."""
    plan = await explain(catalogue, search_query(Filters(text="service"), None, "relevance", 20, None))
    read = scans(plan)
    assert plan["Actual Rows"] == 21
    assert sum(rows for _, relation, rows in read if relation == "thing_summaries") == 1000, read
    assert sum(rows for _, relation, rows in read if relation == "descriptions") == 21, read


async def test_a_selective_combination_of_filters_reads_about_what_it_matches(catalogue: Database) -> None:
    """Kind, vendor words and capability (as agents look for a provider): one scan of their keys, so the rows read
    are about those that match all three, not those that match the broadest two."""
    filters = Filters(kind="agent", vendor="Vendor 7", capability="urn:capability:17")
    plan = await explain(catalogue, search_query(filters, None, "title", 20, None))
    read = scans(plan)
    assert 0 < plan["Actual Rows"] <= 21
    assert sum(rows for _, _, rows in read) <= SIZE // 100, read


@pytest.mark.parametrize("vendor_rules", [False, True], ids=["no vendor rules", "vendor rules"])
async def test_resolution_reads_the_descriptions_of_one_page_of_providers(
    catalogue: Database, vendor_rules: bool
) -> None:
    """The offers in range are ranked (vendor preference, version, id) first and only a page of them is joined to
    their descriptions (the offers themselves, a thousand here, are read from the capability indexes alone)."""
    versions = [f"{major}.{minor}.0" for major in (1, 2, 3) for minor in (0, 1, 2)]
    ranking = Ranking("urn:capability:17", {version: rank for rank, version in enumerate(versions)})
    if vendor_rules:
        ranking = dataclasses.replace(
            ranking, vendor_notes={"Vendor 3": "excluded"}, preferences={"Vendor 7": 0}, default_preference=1
        )
    values = ranking_values(ranking, EVERYTHING)
    plan = await explain(catalogue, ranked_statement(True, vendor_rules), limit=50, **values)
    read = scans(plan)
    assert plan["Actual Rows"] == 50
    assert not [scan for scan in read if scan[0] == "Seq Scan"], read
    assert {scan[0] for scan in read if scan[1] == "thing_capabilities"} == {"Index Only Scan"}, read
    if vendor_rules:  # every offer in range is ranked first, then a page of descriptions is read
        assert sum(rows for _, relation, rows in read if relation in {"descriptions", "thing_summaries"}) <= 2 * 50
    else:  # a page of providers per version in range, of the thousand offers, and their descriptions
        pages = len(versions) * 50
        assert sum(rows for _, relation, rows in read if relation == "thing_capabilities") <= pages, read
        assert sum(rows for _, relation, rows in read if relation in {"descriptions", "thing_summaries"}) <= 2 * pages


async def test_a_page_of_providers_per_version_ranks_as_every_offer_does(own_database_url: str) -> None:
    """Resolution without vendor rules reads the first providers of each version in range; its page is the one
    ranking every offer in range gives (the statement with vendor rules that accept every vendor), with expired
    providers, providers offering the capability twice and unversioned offers among them."""
    async with opened(own_database_url) as database:
        await generate(database, 3000)
        async with database.transaction() as tx:
            await tx.execute(text("UPDATE descriptions SET expires = now() - interval '1 hour' WHERE revision % 4 = 0"))
            # a second offer of the same capability in another version, and offers without a version
            await tx.execute(
                text(
                    "INSERT INTO thing_capabilities (thing_id, position, source, capability_id, name, name_key, "
                    "version, vendor_name) SELECT thing_id, position + 3, source, capability_id, name, name_key, "
                    "CASE WHEN position = 0 THEN NULL ELSE '1.2.0' END, vendor_name FROM thing_capabilities "
                    "WHERE thing_id LIKE '%3'"
                )
            )
        await database.execute(text("ANALYZE"))
        versions = [None, *(f"{major}.{minor}.0" for major in (1, 2, 3) for minor in (0, 1, 2))]
        for capability in ("urn:capability:17", "capability17", "urn:capability:250"):
            for in_range in (versions[1:4], versions[:4], versions[4:], versions):
                ranks = {version: rank for rank, version in enumerate(in_range[::-1])}
                values = ranking_values(Ranking(capability, ranks), EVERYTHING)
                for limit in (5, 50):
                    paged = await database.fetch(ranked_statement(True, False), limit=limit, **values)
                    every = await database.fetch(ranked_statement(True, True), limit=limit, **values)
                    assert [tuple(row) for row in paged] == [tuple(row) for row in every], (capability, in_range)
                    assert paged


async def test_the_versions_a_capability_is_offered_in_are_read_from_its_indexes_alone(catalogue: Database) -> None:
    """Resolution decides ranges on the distinct versions of a capability's offers: a thousand offers, read from
    the indexes by id and by name without visiting the table, where they lie a page apart."""
    plan = await explain(catalogue, versions_statement(True), **offers_values("urn:capability:17", EVERYTHING))
    read = scans(plan)
    assert plan["Actual Rows"] == 9  # 1-3.0-2.0, as bench.catalogue.generate writes them
    assert {scan[0] for scan in read if scan[1] == "thing_capabilities"} == {"Index Only Scan"}, read


async def test_listing_pages_and_next_link_read_through_the_id_index(catalogue: Database) -> None:
    """The first page, and a page past an id deep in the catalogue (what a next link asks for), read a page's worth
    of the id index: a seek, not a walk from the start."""
    deep = await catalogue.fetchval(text('SELECT id FROM descriptions ORDER BY id COLLATE "C" OFFSET 90000 LIMIT 1'))
    for after in ("", deep):
        page = await explain(catalogue, _LISTING, after=after, offset=0, limit=100)
        end = await explain(catalogue, _PAGE_END, after=after, skip=99)
        for plan in (page, end):
            read = examined(plan)
            assert [scan[0] for scan in read] in (["Index Scan"], ["Index Only Scan"]), read
            assert sum(rows for _, _, rows in read) <= 101, read


async def test_change_feed_pages_read_their_range_from_the_index_even_with_a_generic_plan(
    own_database_url: str,
) -> None:
    """PostgreSQL may reuse a plan made without the values (and without statistics of the change log, as before
    its first ANALYZE): a page of the feed must still be an index range, not a pass over the whole log."""
    async with opened(own_database_url) as database:
        await database.execute(
            text(
                "INSERT INTO changes (thing_id, type, at) "
                "SELECT 'urn:test:change:' || n, 'thing_created', now() FROM generate_series(1, 20000) AS n"
            )
        )
        async with database.pool.acquire() as connection:
            await connection.execute("SET plan_cache_mode = force_generic_plan")
            await connection.execute(f"PREPARE page (bigint, bigint, bigint) AS {_RANGE.sql}")
            plan = await connection.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE page (19990, 20000, 500)")
            await connection.execute(f"PREPARE missing (bigint[]) AS {_MISSING.sql}")
            missing = await connection.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE missing ('{5}')")
    for found, expected in ((plan, 10), (missing, 1)):  # the ten in the range; the missing one
        root = (json.loads(found) if isinstance(found, str) else found)[0]["Plan"]
        read = scans(root)
        assert root["Actual Rows"] == expected
        assert sum(rows for _, relation, rows in read if relation == "changes") <= expected, read


async def test_stale_statistics_are_refreshed_after_a_bulk_change(own_database_url: str) -> None:
    async with opened(own_database_url) as database:
        await generate(database, 2000)  # analyzed: nothing stale
        assert await refresh_stale_statistics(database) == []
        async with database.transaction() as tx:
            await tx.execute(delete(thing_capabilities))  # 6,000 rows changed, every row of the table
            await tx.execute(FLUSH_STATISTICS)
        assert await refresh_stale_statistics(database) == ["thing_capabilities"]
        assert await refresh_stale_statistics(database) == []


async def test_pending_index_entries_are_merged_after_autovacuum_analyzed_first(own_database_url: str) -> None:
    """Autovacuum's ANALYZE leaves a table looking fresh but the GIN pending list full; the refresh merges it."""
    async with opened(own_database_url) as database:
        try:
            await database.execute(text("CREATE EXTENSION IF NOT EXISTS pgstattuple"))
        except (RegistryError, asyncpg.PostgresError):
            pytest.skip("the pgstattuple extension (PostgreSQL contrib) is not installed")
        await generate(database, 2000)
        # The test plays autovacuum's part: a VACUUM of its own would merge the pending list first.
        await database.execute(text("ALTER TABLE thing_summaries SET (autovacuum_enabled = false)"))
        async with database.transaction() as tx:
            await tx.execute(text("UPDATE thing_summaries SET search = search || to_tsvector('simple', 'pendingword')"))
            await tx.execute(FLUSH_STATISTICS)  # the rows updated are counted before the ANALYZE, not after it
        await database.execute(text("ANALYZE thing_summaries"))  # as autovacuum would
        pending = text("SELECT pending_tuples FROM pgstatginindex('ix_thing_summaries_search')")
        assert await database.fetchval(pending) > 0
        assert await refresh_stale_statistics(database) == [WORD_OWNERS]  # the summaries' words counted anew
        assert await database.fetchval(pending) == 0


@pytest.mark.parametrize("servers", ["all", "a tenth"])
async def test_mcp_server_pages_seek_to_their_cursor(own_database_url: str, servers: str) -> None:
    """``GET /v0/servers?cursor=…`` in the middle and deep in the published versions reads a page's worth of each
    table it joins, not every row before the cursor; whether every description is a server or few are."""
    size = 20_000
    async with opened(own_database_url) as database:
        await generate(database, size)
        async with database.transaction() as tx:
            await tx.execute(
                text(
                    "INSERT INTO thing_versions (thing_id, version, document_text, registered, revision) "
                    "SELECT id, v, document_text, now(), 1 FROM descriptions, (VALUES ('1.0.0'), ('1.1.0')) AS v (v)"
                )
            )
            which = "" if servers == "all" else "WHERE thing_id LIKE '%0'"
            await tx.execute(text(f"UPDATE thing_summaries SET types = types || ARRAY['mcp:Server'] {which}"))
        await database.execute(text("ANALYZE"))
        for position in (size // 2, size - size // 10):
            deep = await database.fetchval(
                text("SELECT id FROM descriptions ORDER BY id OFFSET :skip LIMIT 1"), skip=position
            )
            page = published_versions_statement(ServerQuery("mcp:Server"), after=(deep, "1.0.0"), limit=31)
            plan = await explain(database, page)
            read = examined(plan)
            assert plan["Actual Rows"] == 31
            if position == size // 2:  # a seek on each index, as many rows as the page needs
                assert sum(rows for _, _, rows in read) <= 3 * 31 * (1 if servers == "all" else 10), read
            else:  # near the end the planner may rather read what follows the cursor, never what precedes it
                past = size - position
                assert all(rows <= 2 * past + 31 for _, _, rows in read), read


SEEKS = {
    **{case: CASES[case] for case in ("no filter, by title", "kind, by title")},
    "newest first": (Filters(), "modified"),
}


@pytest.mark.parametrize("case", list(SEEKS))
async def test_search_pages_seek_to_their_cursor(catalogue: Database, case: str) -> None:
    """A search page past a cursor deep in the results reads a page's worth of the sort's index, not every match
    before the cursor (which a filter on a few matches, such as a vendor's, reads anyway)."""
    filters, sort = SEEKS[case]
    before = await catalogue.fetch(search_query(filters, None, sort, 3000, None))
    last = before[-2]  # the page holds limit + 1 rows
    plan = await explain(catalogue, search_query(filters, None, sort, 20, (last["sort_key"], last["thing_id"])))
    read = examined(plan)
    assert plan["Actual Rows"] == 21
    assert sum(rows for _, _, rows in read) <= 4 * 21, read


@pytest.mark.parametrize(
    "need",
    [
        "service",  # every description
        "weather service",  # a sixth, and every one
        "something that can tell me tomorrow's weather in Berlin",  # words none has, and a sixth
        "qqqzzz xxyyzz",  # nothing
        "topic42 answering",  # a few hundred (a word of 500), and every one
    ],
)
async def test_a_need_reads_a_bounded_number_of_rows_whatever_its_words(catalogue: Database, need: str) -> None:
    """A need in plain words reads its selective words' matches through the full-text index and, only to top up,
    a few of its common words' matches: never the catalogue, however common its words."""
    store = CatalogStore(catalogue)
    filters = Filters(text=need, text_match="any", text_query=any_words_query(need))
    async with catalogue.pool.acquire() as connection, connection.transaction():
        await connection.execute(f"{SEARCH_PLANNER}; {NEED_PLANNER}")  # as CatalogStore.need_matches
        passes = await need_passes(Transaction(connection), store.word_statistics, words(need), PREFIX_FROM)
        plan = await explain_on(connection, need_query(filters, None, passes, 20))
    read = scans(plan)
    assert not [scan for scan in read if scan[0] == "Seq Scan"], read
    assert sum(rows for _, relation, rows in read if relation == "thing_summaries") <= PASS_ROWS + TOP_UP_ROWS, read
    rows = await store.need_matches(filters, words(need), PREFIX_FROM, 20)
    assert len(rows) == plan["Actual Rows"] == (0 if need.startswith("qqq") else 20)


async def explain_on(connection: Any, query: Any) -> dict[str, Any]:
    statement = Statement.of(query)
    plan = await connection.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + statement.sql, *statement.arguments({}))
    return dict((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"])
