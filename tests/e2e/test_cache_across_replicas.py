"""The response cache of GET /things/{id} across two replicas: a write, delete or expiry on one reaches the cache
of the other through its change feed; the HTTP behaviour of GET and HEAD is unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from tests.support.things import thing

TD = {"Content-Type": "application/td+json"}


async def _until(read: Callable[[], Awaitable[httpx.Response]], done: Callable[[httpx.Response], bool]) -> None:
    deadline = asyncio.get_running_loop().time() + 10
    while not done(await read()):
        assert asyncio.get_running_loop().time() < deadline, "replica B kept serving what replica A changed"
        await asyncio.sleep(0.02)


async def test_a_write_on_one_replica_reaches_the_cache_of_the_other(own_database_url: str, start_server: Any) -> None:
    env = {"REGISTRY_PURGE_INTERVAL": "0.5"}
    first, second = start_server(env, database=own_database_url), start_server(env, database=own_database_url)
    document = thing("Cached on B")
    async with httpx.AsyncClient(base_url=first.base_url) as a, httpx.AsyncClient(base_url=second.base_url) as b:
        url = f"/things/{document['id']}"
        assert (await a.put(url, json=document, headers=TD)).status_code == 201
        await _until(lambda: b.get(url), lambda response: response.status_code == 200)
        cached = [await b.get(url) for _ in range(3)]  # filled, then served from the cache
        assert {response.headers["etag"] for response in cached} == {cached[0].headers["etag"]}
        retrieved = [response.json()["registration"]["retrieved"] for response in cached]
        assert retrieved == sorted(retrieved)

        # HEAD and a GET with If-None-Match answer as before: the same headers, always 200 with the body.
        head = await b.head(url)
        assert (head.status_code, head.headers["etag"], head.content) == (200, cached[0].headers["etag"], b"")
        assert head.headers["content-type"] == cached[0].headers["content-type"]
        conditional = await b.get(url, headers={"If-None-Match": cached[0].headers["etag"]})
        assert conditional.status_code == 200
        assert conditional.json()["title"] == "Cached on B"

        replaced = await a.put(url, json={**document, "title": "Replaced on A"}, headers=TD)
        assert replaced.status_code == 204
        await _until(lambda: b.get(url), lambda response: response.json()["title"] == "Replaced on A")
        assert (await b.get(url)).headers["etag"] == replaced.headers["etag"]
        assert (await b.head(url)).headers["etag"] == replaced.headers["etag"]

        patched = await a.patch(
            url, json={"title": "Patched on A"}, headers={"Content-Type": "application/merge-patch+json"}
        )
        assert patched.status_code == 204
        await _until(lambda: b.get(url), lambda response: response.json()["title"] == "Patched on A")

        assert (await a.delete(url)).status_code == 204
        await _until(lambda: b.get(url), lambda response: response.status_code == 404)
        assert (await b.get(url)).headers["content-type"].startswith("application/problem+json")

        # A lease renewal on A (no change-log entry) reaches B's cache through the renewal's NOTIFY.
        renewed = thing("Renewed on A", registration={"ttl": 600})
        renewed_url = f"/things/{renewed['id']}"
        assert (await a.put(renewed_url, json=renewed, headers=TD)).status_code == 201
        await _until(lambda: b.get(renewed_url), lambda response: response.status_code == 200)
        expires = (await b.get(renewed_url)).json()["registration"]["expires"]
        await asyncio.sleep(0.01)
        lease = await a.post(f"/api/v1/things/{renewed['id']}/lease")
        assert lease.status_code == 200
        await _until(
            lambda: b.get(renewed_url),
            lambda response: response.json()["registration"]["expires"] == lease.json()["expires"] != expires,
        )

        # Expiry and its purge (the purge may run on either replica): B stops serving it without a write on B.
        leased = thing("Expiring", registration={"ttl": 1})
        leased_url = f"/things/{leased['id']}"
        assert (await a.put(leased_url, json=leased, headers=TD)).status_code == 201
        await _until(lambda: b.get(leased_url), lambda response: response.status_code == 200)
        await _until(lambda: b.get(leased_url), lambda response: response.status_code == 404)
