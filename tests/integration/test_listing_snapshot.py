"""A listing page's head (its next link) and its descriptions come from one snapshot: a write between reading the
head and taking the descriptions changes neither (the page neither grows past its limit nor loses its last
description, which the next page starts past)."""

from __future__ import annotations

from sqlalchemy import text

from bench.catalogue import generate
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
