"""Owners are identities (origin, name) in a tenant, and derived or lapsed ids go to their rightful party
(registry/auth/ownership.py, docs/security.md): each attack performed over HTTP against the application in
process, with API keys in its database and tokens of a test identity provider."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.auth.keys import new_key
from registry.config import Settings
from registry.store.database import Database
from registry.store.keys import KeyStore
from tests.support.identity import AUDIENCE, ISSUER, Identity
from tests.support.in_process import local_client
from tests.support.things import thing

MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
A2A_CARD = Path(__file__).resolve().parents[1] / "data" / "a2a" / "adk_currency_agent-agent_card.json"
#: How the test identity provider's tokens name their owners.
TOKEN_OWNER = f"jwt:{ISSUER}|"


@dataclasses.dataclass
class Directory:
    client: AsyncTestClient[Any]
    credentials: dict[str, str]

    def as_(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.credentials[who]}"}

    async def put(self, who: str, document: dict[str, Any]) -> httpx.Response:
        return await self.client.put(f"/things/{document['id']}", json=document, headers=self.as_(who))


async def add_keys(database_url: str, keys: dict[str, dict[str, Any]]) -> dict[str, str]:
    """API keys as ``registry keys create`` makes them: name → options; returns name → secret."""
    database = Database(database_url, connections=2, listens=False)
    await database.open()
    try:
        secrets = {}
        for name, options in keys.items():
            record, secret = new_key(name, options.pop("scopes", ["read", "write"]), **options)
            await KeyStore(database).add(record)
            secrets[name] = secret
        return secrets
    finally:
        await database.close()


Start = Callable[..., contextlib.AbstractAsyncContextManager[Directory]]


@pytest.fixture
def directory(own_database_url: str, identity: Identity) -> Start:
    """Starts the application on a database of its own with ``keys`` and ``tokens`` (name → claims)."""

    @contextlib.asynccontextmanager
    async def start(
        keys: dict[str, dict[str, Any]], tokens: dict[str, dict[str, Any]] | None = None, **settings: Any
    ) -> AsyncIterator[Directory]:
        credentials = await add_keys(own_database_url, keys)
        for name, claims in (tokens or {}).items():
            credentials[name] = identity.token(**{"scope": "read write", **claims})
        app = create_app(
            Settings(
                database_url=own_database_url,
                db_pool_size=4,
                auth="writes",
                auth_jwks=str(identity.jwks),
                auth_jwt_issuer=ISSUER,
                auth_jwt_audience=AUDIENCE,
                **settings,
            )
        )
        async with local_client(app) as client:
            yield Directory(client, credentials)

    return start


def agent(thing_id: str, title: str = "Agent", **members: Any) -> dict[str, Any]:
    return thing(title, id=thing_id, **members)


def problem(response: httpx.Response, thing_id: str) -> tuple[int, str, str, str]:
    """What a refusal tells: status, type, title and detail (with the id taken out)."""
    body = response.json()
    return response.status_code, body.get("type", ""), body["title"], body["detail"].replace(thing_id, "<id>")


# -- item 7: owners are scoped by tenant and by where the principal came from


async def test_a_key_of_another_tenant_with_the_same_owner_name_cannot_touch_the_description(
    directory: Start,
) -> None:
    """A tenant-B key created with ``--owner alice`` neither patches, deletes nor renews tenant A's description,
    which it cannot read: it gets the answer for a missing description; a PUT cannot take the id."""
    keys = {"alice": {"tenant": "a"}, "mallory": {"tenant": "b", "owner": "alice"}}
    async with directory(keys) as registry:
        client = registry.client
        thing_id, missing = "urn:alice:agent1", "urn:alice:missing"
        assert (await registry.put("alice", agent(thing_id, registration={"ttl": 600}))).status_code == 201
        for method, path, body in (
            ("PATCH", "/things/{}", b'{"title": "Hijacked"}'),
            ("DELETE", "/things/{}", None),
            ("POST", "/api/v1/things/{}/lease", None),
        ):
            for precondition in ({}, {"If-Match": '"999"'}):
                headers = {**registry.as_("mallory"), **MERGE_PATCH, **precondition}
                attempts = [
                    await client.request(method, path.format(target), content=body, headers=headers)
                    for target in (thing_id, missing)
                ]
                assert attempts[0].status_code == 404, (method, precondition, attempts[0].text)
                assert problem(attempts[0], thing_id) == problem(attempts[1], missing), (method, precondition)
        taken = await registry.put("mallory", agent(thing_id, title="Hijacked"))
        # Refused as an id outside the key's namespaces is: nothing tells that another tenant holds it.
        assert (taken.status_code, taken.json()["rule"]) == (403, "namespace")
        assert "key:alice" not in taken.text
        assert '"a"' not in taken.text
        batch = await client.post(
            "/api/v1/things/batch", json=[agent(thing_id, title="Hijacked")], headers=registry.as_("mallory")
        )
        [result] = batch.json()["results"]
        assert (result["status"], result["problem"]["detail"]) == (403, taken.json()["detail"])
        read = await client.get(f"/things/{thing_id}", headers=registry.as_("alice"))
        assert read.json()["title"] == "Agent"
        assert (await client.get(f"/api/v1/things/{thing_id}/owner", headers=registry.as_("alice"))).json() == {
            "id": thing_id,
            "owner": "key:alice",
            "tenant": "a",
        }


async def test_the_same_owner_name_in_another_tenant_is_another_owner(directory: Start) -> None:
    """A description every tenant reads (its creator has none) is not changed by a key of a tenant that has the
    creator's owner name: 403, it is another owner."""
    async with directory({"alice": {}, "mallory": {"tenant": "b", "owner": "alice"}}) as registry:
        thing_id = f"urn:alice:{uuid.uuid4()}"
        assert (await registry.put("alice", agent(thing_id))).status_code == 201
        patched = await registry.client.patch(
            f"/things/{thing_id}", content=b'{"title": "Hijacked"}', headers={**registry.as_("mallory"), **MERGE_PATCH}
        )
        assert (patched.status_code, patched.json()["rule"]) == (403, "owner")
        assert "'key:alice'" in patched.json()["detail"]


async def test_a_token_whose_subject_is_an_api_key_name_does_not_own_its_descriptions(directory: Start) -> None:
    """A token with ``sub: bobfree`` reads the descriptions of the API key ``bobfree`` but changes none of them."""
    async with directory({"bobfree": {}}, {"token": {"subject": "bobfree"}}) as registry:
        client = registry.client
        thing_id = f"urn:bob:{uuid.uuid4()}"
        assert (await registry.put("bobfree", agent(thing_id, registration={"ttl": 600}))).status_code == 201
        assert (await client.get(f"/things/{thing_id}", headers=registry.as_("token"))).status_code == 200
        token_patch = {**registry.as_("token"), **MERGE_PATCH}
        refused = [
            await client.patch(f"/things/{thing_id}", content=b'{"title": "Hijacked"}', headers=token_patch),
            await registry.put("token", agent(thing_id, title="Hijacked")),
            await client.delete(f"/things/{thing_id}", headers=registry.as_("token")),
            await client.post(f"/api/v1/things/{thing_id}/lease", headers=registry.as_("token")),
        ]
        assert [(answer.status_code, answer.json()["rule"]) for answer in refused] == [(403, "owner")] * 4
        # Nor the other way round.
        of_token = f"urn:bob:{uuid.uuid4()}"
        assert (await registry.put("token", agent(of_token))).status_code == 201
        assert (await client.delete(f"/things/{of_token}", headers=registry.as_("bobfree"))).status_code == 403
        owners = [(await client.get(f"/api/v1/things/{each}/owner")).json()["owner"] for each in (thing_id, of_token)]
        assert owners == ["key:bobfree", TOKEN_OWNER + "bobfree"]


async def test_owners_and_actors_are_shown_with_their_origin(directory: Start) -> None:
    """The owner, the change log's actor and transfers name each party unambiguously; an admin names the new
    owner with its origin, and a name without one is refused."""
    async with directory({"carol": {}, "admin": {"scopes": ["admin"]}}, {"token": {"subject": "carol"}}) as registry:
        client = registry.client
        thing_id = f"urn:carol:{uuid.uuid4()}"
        assert (await registry.put("carol", agent(thing_id))).status_code == 201
        for unqualified in ("carol", "jwt:https://elsewhere.example|carol", "key:"):
            refused = await client.put(
                f"/api/v1/things/{thing_id}/owner", json={"owner": unqualified}, headers=registry.as_("admin")
            )
            assert refused.status_code == 400, unqualified
            assert refused.json()["invalidParams"][0]["name"] == "owner"
        moved = await client.put(
            f"/api/v1/things/{thing_id}/owner", json={"owner": TOKEN_OWNER + "carol"}, headers=registry.as_("admin")
        )
        assert moved.json()["owner"] == TOKEN_OWNER + "carol"
        patched = await client.patch(
            f"/things/{thing_id}", content=b'{"title": "By token"}', headers={**registry.as_("token"), **MERGE_PATCH}
        )
        assert patched.status_code == 204, patched.text
        assert (await registry.put("carol", agent(thing_id))).status_code == 403
        changes = (await client.get("/api/v1/changes", headers=registry.as_("admin"))).json()["items"]
        mine = [item for item in reversed(changes) if item["id"] == thing_id]
        assert [(item["type"], item["actor"]) for item in mine] == [
            ("thing_created", "key:carol"),
            ("thing_transferred", "key:admin"),
            ("thing_updated", TOKEN_OWNER + "carol"),
        ]
        assert (mine[1]["transferred_from"], mine[1]["transferred_to"]) == ("key:carol", TOKEN_OWNER + "carol")


async def test_the_quota_counts_each_owner_identity_apart(directory: Start) -> None:
    keys = {"q": {}, "q-of-b": {"tenant": "b", "owner": "q"}}
    async with directory(keys, {"token": {"subject": "q"}}, max_descriptions_per_owner=1) as registry:
        for who in ("q", "token", "q-of-b"):
            assert (await registry.put(who, agent(f"urn:q:{uuid.uuid4()}"))).status_code == 201, who
            refused = await registry.put(who, agent(f"urn:q:{uuid.uuid4()}"))
            assert (refused.status_code, refused.json()["rule"]) == (403, "quota"), who


async def test_a_token_does_not_spend_the_rate_limit_of_the_key_with_its_name(directory: Start) -> None:
    async with directory({"bobfree": {}}, {"token": {"subject": "bobfree"}}, rate_limit_writes="2/minute") as registry:
        statuses = [(await registry.put("bobfree", agent(f"urn:b:{uuid.uuid4()}"))).status_code for _ in range(3)]
        assert statuses == [201, 201, 429]
        assert (await registry.put("token", agent(f"urn:b:{uuid.uuid4()}"))).status_code == 201


# -- item 8: derived ids and lapsed registrations go to their rightful party

FORECAST = {"name": "forecast", "description": "Forecast for a city", "inputSchema": {"type": "object"}}


async def import_tool(registry: Directory, who: str, vendor: str, tool: dict[str, Any] = FORECAST) -> httpx.Response:
    return await registry.client.post(
        "/api/v1/tools/import", params={"format": "mcp", "vendor": vendor}, json=tool, headers=registry.as_(who)
    )


async def test_the_vendors_key_takes_over_a_tool_id_registered_before_it(directory: Start) -> None:
    """Anyone may pre-register the id a tool derives from its vendor and name; a key bound to that vendor takes
    it over (the squatter's description and kept versions go), and keeps it."""
    keys = {"squatter": {}, "acme": {"vendors": ("Acme Corp",)}, "admin": {"scopes": ["admin"]}}
    async with directory(keys) as registry:
        client = registry.client
        squatted = await import_tool(registry, "squatter", "Acme Corp", {**FORECAST, "description": "Squatted"})
        assert squatted.status_code == 201, squatted.text
        thing_id = squatted.json()["id"]
        taken = await import_tool(registry, "acme", "Acme Corp")
        assert (taken.status_code, taken.json()["id"], taken.json()["created"]) == (201, thing_id, True)
        assert (await client.get(f"/api/v1/things/{thing_id}/owner")).json()["owner"] == "key:acme"
        assert (await client.get(f"/things/{thing_id}")).json()["description"] == "Forecast for a city"
        again = await import_tool(registry, "squatter", "Acme Corp")
        assert (again.status_code, again.json()["rule"]) == (403, "owner")
        changes = (await client.get("/api/v1/changes", headers=registry.as_("admin"))).json()["items"]
        assert [(item["type"], item["actor"]) for item in reversed(changes) if item["id"] == thing_id] == [
            ("thing_created", "key:squatter"),
            ("thing_deleted", "key:acme"),
            ("thing_created", "key:acme"),
        ]
        # A key bound to a vendor registers no tool in another vendor's name, derived id or not.
        other = await import_tool(registry, "acme", "Deutsche Telekom AG")
        assert (other.status_code, other.json()["rule"]) == (403, "vendor")


async def test_a_tool_id_squatted_by_a_plain_put_is_taken_over_too(directory: Start) -> None:
    async with directory({"squatter": {}, "acme": {"vendors": ("Acme Corp",)}}) as registry:
        target = f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'lmos-tool:Acme Corp:forecast')}"
        squatted = agent(target, **{"lmos:metadata": {"lmos:vendor": {"lmos:name": "Squatter Labs"}}})
        assert (await registry.put("squatter", squatted)).status_code == 201
        taken = await import_tool(registry, "acme", "Acme Corp")
        assert (taken.status_code, taken.json()["id"]) == (201, target)
        assert (await registry.client.get(f"/api/v1/things/{target}/owner")).json()["owner"] == "key:acme"


def card(url: str) -> dict[str, Any]:
    return {**json.loads(A2A_CARD.read_text()), "url": url}


async def test_an_a2a_card_id_belongs_to_the_party_whose_namespace_covers_its_url(directory: Start) -> None:
    keys = {
        "squatter": {},
        "origin": {"namespaces": ("https://agents.example.com/*",)},
        "elsewhere": {"namespaces": ("https://agents.evil.example/*",)},
    }
    tokens = {"origin-token": {"subject": "ops", "registry_namespaces": ["https://agents.example.com/*"]}}
    async with directory(keys, tokens) as registry:
        client = registry.client

        async def import_card(who: str, url: str) -> httpx.Response:
            return await client.post(
                "/api/v1/agents/import", params={"format": "a2a"}, json=card(url), headers=registry.as_(who)
            )

        url = "https://agents.example.com/currency"
        refused = await import_card("elsewhere", url)
        assert (refused.status_code, refused.json()["rule"]) == (403, "namespace")
        assert url in refused.json()["detail"]
        squatted = await import_card("squatter", url)
        assert squatted.status_code == 201, squatted.text
        thing_id = squatted.json()["id"]
        taken = await import_card("origin", url)
        assert (taken.status_code, taken.json()["id"]) == (201, thing_id)
        assert (await client.get(f"/api/v1/things/{thing_id}/owner")).json()["owner"] == "key:origin"
        # Held rightfully now: another party bound to the same origin does not take it.
        held = await import_card("origin-token", url)
        assert (held.status_code, held.json()["rule"]) == (403, "owner")
        # A card of its own origin under a key bound to it: an id it could not have named itself.
        own = await import_card("origin", "https://agents.example.com/other")
        assert own.status_code == 201, own.text


async def test_an_mcp_server_name_belongs_to_the_publisher_bound_to_its_namespace(directory: Start) -> None:
    """A server published first under another's namespace (and at a high version) does not lock the namespace's
    publisher out: its first version replaces the squatter's."""
    keys = {"squatter": {}, "acme": {"vendors": ("io.github.acme",)}}
    async with directory(keys) as registry:
        client = registry.client

        async def publish(who: str, version: str) -> httpx.Response:
            server = {"name": "io.github.acme/weather", "description": "Weather", "version": version}
            return await client.post("/v0.1/publish", json=server, headers=registry.as_(who))

        assert (await publish("squatter", "9.0.0")).status_code == 200
        taken = await publish("acme", "1.0.0")
        assert taken.status_code == 200, taken.text
        versions = (await client.get("/v0.1/servers/io.github.acme%2Fweather/versions")).json()["servers"]
        assert [item["server"]["version"] for item in versions] == ["1.0.0"]
        refused = await publish("squatter", "9.0.1")
        assert (refused.status_code, refused.json()["rule"]) == (403, "owner")


async def wait_for(check: Callable[[], Awaitable[bool]], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("purge_interval", [3600.0, 0.1], ids=["expired", "purged"])
async def test_an_expired_registration_is_its_owners_for_the_grace(directory: Start, purge_interval: float) -> None:
    """An agent whose lease lapsed gets its id back when it registers again within the grace, expired or already
    purged (a tombstone holds the id); another party gets it only after the grace."""
    keys = {"agent": {}, "other": {}, "admin": {"scopes": ["admin"]}}
    async with directory(keys, expiry_grace=1.5, purge_interval=purge_interval) as registry:
        client = registry.client
        thing_id = f"urn:agent:{uuid.uuid4()}"
        lapsing = agent(thing_id, registration={"ttl": 0.3})
        assert (await registry.put("agent", lapsing)).status_code == 201

        async def gone() -> bool:
            if (await client.get(f"/things/{thing_id}")).status_code != 404:
                return False
            if purge_interval > 1:
                return True
            changes = (await client.get("/api/v1/changes", headers=registry.as_("admin"))).json()["items"]
            return any(item["id"] == thing_id and item["type"] == "thing_deleted" for item in changes)

        await wait_for(gone)
        refused = await registry.put("other", agent(thing_id))
        assert (refused.status_code, refused.json()["rule"]) == (403, "owner")
        assert "'key:agent'" in refused.json()["detail"]
        assert (await registry.put("agent", lapsing)).status_code == 201
        await wait_for(gone)
        await asyncio.sleep(1.6)  # the grace
        assert (await registry.put("other", agent(thing_id))).status_code == 201
        assert (await client.get(f"/api/v1/things/{thing_id}/owner")).json()["owner"] == "key:other"
