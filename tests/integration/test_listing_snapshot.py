"""A listing page's head (its next link) and its descriptions come from one snapshot: a write between reading the
head and taking the descriptions changes neither (the page neither grows past its limit nor loses its last
description, which the next page starts past)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text

from bench.catalogue import generate
from registry.store.counts import COUNT
from registry.store.database import Database
from registry.store.things import ThingStore, Window

INSERT = text(
    "INSERT INTO descriptions (id, document_text, anonymous, created, modified, last_seen, revision) "
    "VALUES (:id, '{}', false, now(), now(), now(), 1)"
)


async def test_a_write_between_a_pages_head_and_its_descriptions_is_not_seen(own_database_url: str) -> None:
    database = Database(own_database_url, connections=4)  # the page holds one while the writes take another
    await database.open()
    try:
        await generate(database, 50)
        things = ThingStore(database)
        head, rows = await things.listing(Window(limit=10))
        # Ids sort as text: urn:gen:1, urn:gen:10, …, urn:gen:18; the new one falls inside the page.
        await database.execute(INSERT, id="urn:gen:10a")
        await database.execute(text("DELETE FROM descriptions WHERE id = 'urn:gen:18'"))
        page = [stored.id async for stored in rows]
        assert len(page) == 10
        assert page[-1] == head.last == "urn:gen:18"
        assert head.more
        assert "urn:gen:10a" not in page
        after_head, after_rows = await things.listing(Window(after=head.last or "", limit=10))
        following = [stored.id async for stored in after_rows]
        assert following[0] == "urn:gen:19"
        assert after_head.version == head.version  # the change log was not written to
        _, fresh = await things.listing(Window(limit=10))
        assert "urn:gen:10a" in [stored.id async for stored in fresh]
    finally:
        await database.close()


async def test_the_collections_total_counts_the_live_descriptions_of_its_snapshot(own_database_url: str) -> None:
    """The total is every row less the expired ones not purged yet (leased rows count until their lease ends), and
    comes from the page's snapshot."""
    database = Database(own_database_url, connections=4)
    await database.open()
    try:
        await generate(database, 30)
        await database.execute(text("UPDATE descriptions SET expires = now() + interval '1 hour' WHERE revision <= 5"))
        await database.execute(
            text("UPDATE descriptions SET expires = now() - interval '1 second' WHERE revision > 25")
        )
        things = ThingStore(database)
        assert await things.count() == 25
        head, rows = await things.listing(Window(limit=10), counted=True)
        await database.execute(INSERT, id="urn:gen:10a")
        assert head.total == 25
        assert len([stored.id async for stored in rows]) == 10
        assert await things.count() == 26
    finally:
        await database.close()


def scans(node: dict[str, Any]) -> list[tuple[str, str]]:
    """(node type, index or relation) of every scan in the plan."""
    found = (
        [(node["Node Type"], node.get("Index Name", node.get("Relation Name", "")))]
        if "Scan" in node["Node Type"]
        else []
    )
    for child in node.get("Plans", []):
        found += scans(child)
    return found


async def test_the_collections_total_reads_the_kept_counts_not_the_rows(own_database_url: str) -> None:
    """With documents of a real description's size in the table (1.6 KB each, stored inline), the total is a scan
    of the few rows of kept counts and a range of the partial index on ``expires``: neither the ids nor the
    documents."""
    database = Database(own_database_url, connections=2)
    await database.open()
    try:
        await generate(database, 20_000)
        await database.execute(
            text(
                "UPDATE descriptions "
                "SET document_text = json_build_object('id', id, 'description', repeat('a', 1600))::text"
            )
        )
        await database.execute(text("VACUUM ANALYZE descriptions"))  # as the statistics refresher leaves it
        async with database.pool.acquire() as connection:
            plan = await connection.fetchval("EXPLAIN (FORMAT JSON) " + COUNT.sql)
        read = scans((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"])
        assert sorted(read) == [
            ("Index Only Scan", "ix_descriptions_expires"),
            ("Seq Scan", "description_counts"),
        ], read
    finally:
        await database.close()
