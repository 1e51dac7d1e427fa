"""API keys managed over HTTP (``/api/v1/keys``) and the 403 that says what a key has and how to get another: each
attempt performed over HTTP against the application in process, with keys in its own database."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client
from tests.support.keys import add_key
from tests.support.things import thing


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@contextlib.asynccontextmanager
async def directory(database_url: str, auth: str = "all") -> AsyncIterator[AsyncTestClient[Any]]:
    app = create_app(Settings(database_url=database_url, db_pool_size=3, auth=auth))
    async with local_client(app) as client:
        yield client


async def test_an_admin_creates_lists_and_revokes_keys_and_sees_the_secret_once(
    own_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    admin = bearer(await add_key(own_database_url, "root", ["admin"]))
    async with directory(own_database_url) as client:
        caplog.set_level(logging.INFO, logger="registry.audit")
        created = await client.post(
            "/api/v1/keys",
            json={
                "name": "ci-acme",
                "scopes": ["read", "write"],
                "owner": "team-acme",
                "namespaces": ["urn:acme:*"],
                "vendors": ["Acme Corp"],
                "tenant": "acme",
                "expires": "30d",
            },
            headers=admin,
        )
        assert created.status_code == 201, created.text
        assert created.headers["cache-control"] == "no-store"
        key = created.json()
        secret = key.pop("secret")
        assert secret.startswith(f"reg_{key['id']}_")
        assert key["ownerIdentity"] == "key:team-acme"
        assert (key["scopes"], key["tenant"], key["state"]) == (["read", "write"], "acme", "active")
        audited = [record for record in caplog.records if record.getMessage() == "api key created"]
        assert [(record.key_name, record.actor) for record in audited] == [("ci-acme", "key:root")]
        assert secret not in caplog.text

        # The new key works at once, within what it was given.
        document = {**thing("Acme agent"), "id": "urn:acme:agent:1"}
        written = await client.put(f"/things/{document['id']}", json=document, headers=bearer(secret))
        assert written.status_code == 201, written.text

        # The list shows it without its secret or hash, now with its last use.
        listed = await client.get("/api/v1/keys", headers=admin)
        assert listed.status_code == 200
        assert secret not in listed.text
        entry = next(item for item in listed.json()["items"] if item["id"] == key["id"])
        assert "secret" not in entry
        assert "secret_hash" not in entry
        assert entry["lastUsed"] is not None

        revoked = await client.delete(f"/api/v1/keys/{key['id']}", headers=admin)
        assert revoked.status_code == 200
        assert revoked.json()["state"] == "revoked"
        assert secret not in revoked.text
        refused = await client.get("/things", headers=bearer(secret))
        assert refused.status_code == 401
        assert "revoked" in refused.json()["detail"]

        assert (await client.delete("/api/v1/keys/000000000000", headers=admin)).status_code == 404
        again = await client.post("/api/v1/keys", json={"name": "ci-acme"}, headers=admin)
        assert again.status_code == 409


async def test_a_write_key_cannot_create_keys_and_is_told_what_it_has_and_how_to_get_more(
    own_database_url: str,
) -> None:
    writer = bearer(await add_key(own_database_url, "ci", ["read", "write"]))
    reader = bearer(await add_key(own_database_url, "dash", ["read"]))
    async with directory(own_database_url) as client:
        for method, path, body in (
            ("POST", "/api/v1/keys", {"name": "mine", "scopes": ["admin"]}),
            ("GET", "/api/v1/keys", None),
            ("DELETE", "/api/v1/keys/abc", None),
        ):
            refused = await client.request(method, path, json=body, headers=writer)
            assert refused.status_code == 403, (method, refused.text)
            problem = refused.json()
            assert refused.headers["content-type"].startswith("application/problem+json")
            assert problem["rule"] == "scope"
            assert (problem["scopes"], problem["needed"]) == (["read", "write"], "admin")
            assert "The API key 'ci' has the scopes read, write; this request needs admin" in problem["detail"]
            assert "registry keys create --name NAME --scopes admin" in problem["detail"]
        assert (
            "mine"
            not in (
                await client.get("/api/v1/keys", headers=bearer(await add_key(own_database_url, "root", ["admin"])))
            ).text
        )

        # The same answer for any request beyond a key's scopes.
        document = thing("Read-only try")
        write = await client.put(f"/things/{document['id']}", json=document, headers=reader)
        assert write.status_code == 403
        assert write.json()["detail"] == (
            "The API key 'dash' has the scopes read; this request needs write: ask an admin for a key with write "
            "(`registry keys create --name NAME --scopes write`, or POST /api/v1/keys)"
        )


async def test_keys_cannot_be_made_over_http_while_authentication_is_off(own_database_url: str) -> None:
    """Anyone reaches an open directory: a key made then would wait, valid, for authentication to be turned on."""
    async with directory(own_database_url, auth="off") as client:
        refused = await client.post("/api/v1/keys", json={"name": "planted", "scopes": ["admin"]})
        assert refused.status_code == 403
        assert "registry keys create" in refused.json()["detail"]
        assert (await client.get("/api/v1/keys")).status_code == 403
    async with directory(own_database_url) as client:
        admin = bearer(await add_key(own_database_url, "root", ["admin"]))
        assert [item["name"] for item in (await client.get("/api/v1/keys", headers=admin)).json()["items"]] == ["root"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "scopes": ["root"]}, "scopes"),
        ({"name": "x", "scopes": []}, "scopes"),
        ({"name": "line\nbreak"}, "name"),
        ({"name": "\u202eevil"}, "name"),
        ({"name": " padded"}, "name"),
        ({"name": "n" * 129}, "name"),
        ({"name": "x", "owner": "a\x1b[2Jb"}, "owner"),
        ({"name": "x", "tenant": ""}, "tenant"),
        ({"name": "x", "namespaces": ["urn:a:*"] * 101}, "namespaces"),
        ({"name": "x", "vendors": ["v\x07"]}, "vendors"),
        ({"name": "x", "expires": "yesterday"}, "expires"),
        ({"name": "x", "expires": "2001-01-01T00:00:00Z"}, "expires"),
    ],
)
async def test_a_key_the_directory_cannot_show_or_use_is_refused_with_the_field(
    own_database_url: str, body: dict[str, Any], field: str
) -> None:
    admin = bearer(await add_key(own_database_url, "root", ["admin"]))
    async with directory(own_database_url) as client:
        refused = await client.post("/api/v1/keys", json=body, headers=admin)
        assert refused.status_code == 400, refused.text
        assert refused.json()["validationErrors"][0]["field"] == field
        listed = await client.get("/api/v1/keys", headers=admin)
        assert [item["name"] for item in listed.json()["items"]] == ["root"]


async def test_a_key_named_like_another_keys_id_revokes_only_itself(own_database_url: str) -> None:
    """``registry keys revoke X`` takes X as an id first: a key whose name spells another key's id is not revoked
    along with it, nor is that key revoked when the name is meant."""
    from registry.store.database import Database
    from registry.store.keys import KeyStore

    await add_key(own_database_url, "victim", ["read"])
    database = Database(own_database_url, connections=1, listens=False)
    await database.open()
    try:
        store = KeyStore(database)
        victim = next(record for record in await store.all() if record.name == "victim")
        await add_key(own_database_url, victim.id, ["read"])
        revoked = await store.revoke(victim.id)
        assert revoked is not None
        assert revoked.name == "victim"
        states = {record.name: record.revoked is not None for record in await store.all()}
        assert states == {"victim": True, victim.id: False}
    finally:
        await database.close()
