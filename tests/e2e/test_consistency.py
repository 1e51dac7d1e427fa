"""No lost updates under concurrency, and acknowledged writes survive ``kill -9`` of the server."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from tests.support.servers import ServerProcess, fresh_database

TD_JSON = {"content-type": "application/td+json"}
MERGE_PATCH = {"content-type": "application/merge-patch+json"}


def counter_td(thing_id: str, count: int = 0) -> dict[str, Any]:
    return {
        "@context": "https://www.w3.org/2022/wot/td/v1.1",
        "id": thing_id,
        "title": "counter",
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
        "count": count,
    }


async def increment(client: httpx.AsyncClient, thing_id: str, *, use_put: bool) -> int:
    """Read-modify-write with If-Match until it applies; returns how many attempts were refused with 412."""
    refused = 0
    while True:
        current = await client.get(f"/things/{thing_id}")
        assert current.status_code == 200, current.text
        count = current.json()["count"] + 1
        headers = {"if-match": current.headers["etag"]}
        if use_put:
            response = await client.put(
                f"/things/{thing_id}", json=counter_td(thing_id, count), headers=headers | TD_JSON
            )
        else:
            response = await client.patch(f"/things/{thing_id}", json={"count": count}, headers=headers | MERGE_PATCH)
        if response.status_code == 204:
            return refused
        assert response.status_code == 412, response.text
        refused += 1


def test_if_match_loses_no_update(base_url: str) -> None:
    thing_id = f"urn:uuid:{uuid.uuid4()}"
    workers, rounds = 12, 8

    async def run() -> int:
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            assert (
                await client.put(f"/things/{thing_id}", json=counter_td(thing_id), headers=TD_JSON)
            ).status_code == 201

            async def worker(number: int) -> int:
                return sum([await increment(client, thing_id, use_put=number % 2 == 0) for _ in range(rounds)])

            refused = await asyncio.gather(*(worker(number) for number in range(workers)))
            final = (await client.get(f"/things/{thing_id}")).json()
            assert final["count"] == workers * rounds
            return sum(refused)

    refused = asyncio.run(run())
    assert refused > 0, "the workers never contended, so the test proved nothing"


def test_concurrent_patches_all_apply(base_url: str) -> None:
    """Without If-Match, concurrent merge patches of different members are serialised, none overwritten."""
    thing_id = f"urn:uuid:{uuid.uuid4()}"
    members = 24

    async def run() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            await client.put(f"/things/{thing_id}", json=counter_td(thing_id), headers=TD_JSON)
            responses = await asyncio.gather(
                *(
                    client.patch(f"/things/{thing_id}", json={f"member{index}": index}, headers=MERGE_PATCH)
                    for index in range(members)
                )
            )
            assert [response.status_code for response in responses] == [204] * members
            etags = {response.headers["etag"] for response in responses}
            assert len(etags) == members
            document: dict[str, Any] = (await client.get(f"/things/{thing_id}")).json()
            return document

    document = asyncio.run(run())
    assert {f"member{index}" for index in range(members)} <= set(document)


def test_acknowledged_writes_survive_kill_9(start_server: Callable[..., ServerProcess]) -> None:
    """Writes answered 201 are committed: SIGKILL in the middle of a write storm loses none of them."""
    server = start_server()
    acknowledged: list[str] = []
    stop = threading.Event()

    async def write_storm() -> None:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=10) as client:

            async def writer() -> None:
                while not stop.is_set():
                    thing_id = f"urn:uuid:{uuid.uuid4()}"
                    try:
                        response = await client.put(f"/things/{thing_id}", json=counter_td(thing_id), headers=TD_JSON)
                    except httpx.HTTPError:
                        return
                    if response.status_code == 201:
                        acknowledged.append(thing_id)

            await asyncio.gather(*(writer() for _ in range(8)))

    storm = threading.Thread(target=lambda: asyncio.run(write_storm()))
    storm.start()
    deadline = time.monotonic() + 30  # the server is killed as soon as 50 are: a limit only for a failing run
    while len(acknowledged) < 50 and time.monotonic() < deadline:
        time.sleep(0.05)
    server.kill()
    stop.set()
    storm.join(30)
    assert len(acknowledged) >= 50

    restarted = start_server()
    with httpx.Client(base_url=restarted.base_url, timeout=30) as client:
        listed = {td["id"] for td in client.get("/things").json()}
    missing = [thing_id for thing_id in acknowledged if thing_id not in listed]
    assert missing == []


def test_database_connections_killed_recover(postgres_admin_url: str) -> None:
    """After PostgreSQL drops every connection (restart, failover), the next reads and writes just work."""
    import asyncpg

    with fresh_database(postgres_admin_url) as database_url, ServerProcess(database_url) as server:
        database = database_url.rsplit("/", 1)[1]
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            thing_id = f"urn:uuid:{uuid.uuid4()}"
            assert client.put(f"/things/{thing_id}", json=counter_td(thing_id), headers=TD_JSON).status_code == 201
            assert client.get(f"/things/{thing_id}").status_code == 200

            async def terminate() -> int:
                admin = await asyncpg.connect(postgres_admin_url)
                try:
                    return len(
                        await admin.fetch(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = $1 AND application_name = 'lmos-registry'",
                            database,
                        )
                    )
                finally:
                    await admin.close()

            assert asyncio.run(terminate()) >= 2
            time.sleep(0.2)
            assert client.get(f"/things/{thing_id}").status_code == 200
            patched = client.patch(f"/things/{thing_id}", json={"count": 1}, headers=MERGE_PATCH)
            assert patched.status_code == 204, patched.text
            assert client.get(f"/things/{thing_id}").json()["count"] == 1
