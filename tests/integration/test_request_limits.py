"""What one client may spend, over HTTP against the application in-process: failed authentications per address
(also on the cached-read fast path) and one write per description of a batch."""

from __future__ import annotations

import asyncio
import time

import pytest
from litestar._asgi.asgi_router import ASGIRouter
from litestar.types import Receive, Scope, Send

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client
from tests.support.keys import create_key
from tests.support.things import thing

PROBLEM = "application/problem+json"


async def test_failed_authentications_are_limited_per_address_also_on_cached_reads(
    own_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    routed: list[str] = []
    route = ASGIRouter.__call__

    async def counted(self: ASGIRouter, scope: Scope, receive: Receive, send: Send) -> None:
        routed.append(scope["path"])
        await route(self, scope, receive, send)

    monkeypatch.setattr(ASGIRouter, "__call__", counted)
    alice = {"Authorization": f"Bearer {create_key(own_database_url, 'alice', '--scopes', 'read,write')}"}
    guessed = {"Authorization": "Bearer reg_0123456789abcdef_guessed"}
    settings = Settings(
        database_url=own_database_url, db_pool_size=3, auth="writes", rate_limit_auth_failures="3/minute"
    )
    document = thing("Cached")
    path = f"/things/{document['id']}"
    async with local_client(create_app(settings)) as client:
        assert (await client.put(path, json=document, headers=alice)).status_code == 201
        deadline = time.monotonic() + 10
        while True:  # until the change feed listens and the read is answered from the response cache
            before = len(routed)
            assert (await client.get(path, headers=alice)).status_code == 200
            if len(routed) == before:
                break
            assert time.monotonic() < deadline, "no read of the description was answered from the cache"
            await asyncio.sleep(0.05)
        assert [(await client.get(path, headers=guessed)).status_code for _ in range(3)] == [401, 401, 401]
        refused = await client.get(path, headers=guessed)
        assert refused.status_code == 429, refused.text
        assert refused.headers["content-type"].startswith(PROBLEM)
        assert "failed authentications" in refused.json()["detail"]
        assert int(refused.headers["retry-after"]) >= 1
        # Credentials from this address are not even checked any more, good ones included (a guesser learns
        # nothing), on the cached-read path and on every other.
        assert (await client.get(path, headers=alice)).status_code == 429
        assert (await client.put(path, json=document, headers=alice)).status_code == 429
        assert (await client.get(path, headers={"Authorization": "Bearer an.access.token"})).status_code == 429
        # Requests without credentials are not guesses: they are answered as before.
        assert (await client.get(path)).status_code == 200


async def test_a_batch_counts_one_write_per_description(own_database_url: str) -> None:
    settings = Settings(database_url=own_database_url, db_pool_size=3, rate_limit_writes="5/minute")
    async with local_client(create_app(settings)) as client:
        six = [thing(f"Batch {index}") for index in range(6)]
        refused = await client.post("/api/v1/things/batch", json=six)
        assert refused.status_code == 429, refused.text
        assert refused.headers["content-type"].startswith(PROBLEM)
        assert "counts 6" in refused.json()["detail"]
        assert "at most 5 at a time" in refused.json()["detail"]
        # Refused whole: nothing of it was written.
        assert all([(await client.get(f"/things/{each['id']}")).status_code == 404 for each in six])
        three = await client.post("/api/v1/things/batch", json=six[:3])
        assert three.status_code == 200, three.text
        assert three.json()["written"] == 3
        # Two writes are left: a batch of three does not fit, and is refused before anything is written.
        too_many = await client.post("/api/v1/things/batch", json=six[3:])
        assert too_many.status_code == 429, too_many.text
        assert "counts 3 and does not fit" in too_many.json()["detail"]
        assert (await client.get(f"/things/{six[3]['id']}")).status_code == 404
        for each in six[3:5]:
            assert (await client.put(f"/things/{each['id']}", json=each)).status_code == 201
        assert (await client.put(f"/things/{six[5]['id']}", json=six[5])).status_code == 429
