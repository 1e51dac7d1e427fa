"""Migration 0013_owner_identity gives the owners and actors already stored the origin that made them."""

from __future__ import annotations

import asyncio
import json

import asyncpg

from registry.store.migrations import migrate
from tests.support.servers import fresh_database

ISSUER = "https://idp.example|eu"


async def store_names(url: str) -> None:
    """Rows as 0012 stored them: owner and actor names without their origin."""
    connection = await asyncpg.connect(url)
    try:
        for key_id, name, owner in (("k1", "ci", "team"), ("k2", "bobfree", "bobfree")):
            await connection.execute(
                "INSERT INTO api_keys (id, name, secret_hash, scopes, owner, namespaces, vendors, created) "
                "VALUES ($1, $2, 'x', '{write}', $3, '{}', '{}', now())",
                key_id,
                name,
                owner,
            )
        for thing_id, owner in (("urn:team", "team"), ("urn:carol", "carol"), ("urn:bob", "bobfree"), ("urn:x", None)):
            await connection.execute(
                "INSERT INTO descriptions (id, document_text, anonymous, created, modified, last_seen, revision, "
                "owner) VALUES ($1, '{}', false, now(), now(), now(), 1, $2)",
                thing_id,
                owner,
            )
        for thing_id, kind, diff, actor in (
            ("urn:team", "thing_created", "{}", "ci"),
            ("urn:carol", "thing_created", "{}", "carol"),
            ("urn:team", "thing_transferred", json.dumps({"id": "urn:team", "from": "team", "to": "carol"}), "ci"),
            ("urn:x", "thing_transferred", json.dumps({"id": "urn:x", "from": None, "to": "team"}), None),
        ):
            await connection.execute(
                "INSERT INTO changes (thing_id, type, diff, at, actor) VALUES ($1, $2, $3::jsonb, now(), $4)",
                thing_id,
                kind,
                diff,
                actor,
            )
    finally:
        await connection.close()


async def read_identities(url: str) -> tuple[dict[str, str | None], list[tuple[str | None, str | None]]]:
    connection = await asyncpg.connect(url)
    try:
        owners = {row[0]: row[1] for row in await connection.fetch("SELECT id, owner FROM descriptions")}
        changes = await connection.fetch("SELECT actor, diff FROM changes ORDER BY seq")
        return owners, [(row[0], row[1]) for row in changes]
    finally:
        await connection.close()


def migrated(postgres_admin_url: str, issuer: str) -> tuple[dict[str, str | None], list[tuple[str | None, str | None]]]:
    with fresh_database(postgres_admin_url, migrate=False) as url:
        migrate(url, "0012_rate_counts")
        asyncio.run(store_names(url))
        migrate(url, jwt_issuer=issuer)
        return asyncio.run(read_identities(url))


def test_names_of_keys_become_key_identities_and_the_others_the_issuers(postgres_admin_url: str) -> None:
    owners, changes = migrated(postgres_admin_url, ISSUER)
    token = "jwt:https://idp.example%7Ceu|"
    assert owners == {"urn:team": "key:team", "urn:carol": token + "carol", "urn:bob": "key:bobfree", "urn:x": None}
    assert [actor for actor, _ in changes] == ["key:ci", token + "carol", "key:ci", None]
    transfers = [json.loads(diff) for _, diff in changes[2:]]
    assert transfers == [
        {"id": "urn:team", "from": "key:team", "to": token + "carol"},
        {"id": "urn:x", "from": None, "to": "key:team"},
    ]


def test_without_an_issuer_every_name_is_a_keys(postgres_admin_url: str) -> None:
    owners, changes = migrated(postgres_admin_url, "")
    assert owners == {"urn:team": "key:team", "urn:carol": "key:carol", "urn:bob": "key:bobfree", "urn:x": None}
    assert [actor for actor, _ in changes] == ["key:ci", "key:carol", "key:ci", None]
