"""JSONPath searches run on threads of their own, a few per client: however many pathological searches run, a
write does not wait for them (a real server: the measure is the latency other requests see under load)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.servers import ServerProcess, fresh_database
from tests.support.things import PATHOLOGICAL_JSONPATH, nested, thing

SEARCHERS = 6
#: REGISTRY_JSONPATH_TIMEOUT, seconds: what a write held up by the searches would wait (for one to stop), so the
#: longer it is, the more room the bound on the write leaves a loaded machine while still telling the two apart.
DEADLINE = 4.0
#: Seconds the write may take: it takes a few hundred milliseconds on a loaded machine, and one held up until a
#: search stops takes DEADLINE less the 0.3 s the searches start ahead, 3.7 s.
WRITE_BOUND = 2.5


@pytest.fixture(scope="module")
def deep_server(postgres_admin_url: str) -> Iterator[ServerProcess]:
    """A server with a DEADLINE JSONPath timeout over six descriptions each holding ``nested(7, 4)``."""
    settings = {"REGISTRY_JSONPATH_TIMEOUT": f"{DEADLINE:g}"}
    with fresh_database(postgres_admin_url) as url, ServerProcess(url, settings) as process:
        deep = [thing(f"Deep {index}", tree=nested(7, 4)) for index in range(6)]
        written = httpx.post(process.base_url + "/api/v1/things/batch", json=deep, timeout=120)
        assert written.status_code == 200, written.text
        yield process


async def _search(base_url: str, source: str) -> tuple[int, float]:
    transport = httpx.AsyncHTTPTransport(local_address=source)
    async with httpx.AsyncClient(base_url=base_url, transport=transport, timeout=60) as client:
        started = time.monotonic()
        answer = await client.get("/search/jsonpath", params={"query": PATHOLOGICAL_JSONPATH})
        return answer.status_code, time.monotonic() - started


async def test_pathological_searches_do_not_hold_up_an_unrelated_write(deep_server: ServerProcess) -> None:
    """Six searches that each would run for a minute, from six clients, and a 64 kB PUT meanwhile."""
    searches = [
        asyncio.create_task(_search(deep_server.base_url, f"127.0.0.{10 + index}")) for index in range(SEARCHERS)
    ]
    await asyncio.sleep(0.3)  # the searches are running (two) or waiting for a thread (four)
    document = thing("Unrelated", description="x" * 64_000)
    async with httpx.AsyncClient(base_url=deep_server.base_url, timeout=60) as client:
        started = time.monotonic()
        written = await client.put(f"/things/{document['id']}", json=document)
        took = time.monotonic() - started
    outcomes = await asyncio.gather(*searches)
    print(f"64 kB PUT during {SEARCHERS} pathological searches: {took * 1000:.0f} ms; searches: {outcomes}")
    assert written.status_code == 201, written.text
    assert took < WRITE_BOUND, f"the PUT took {took:.2f} s"
    # Each search ended at its deadline (400), or was told to retry after waiting a deadline's length for a thread
    # (503): none ran on.
    assert all(status in {400, 503} for status, _ in outcomes), outcomes
    # At most a deadline waiting and a deadline running (8 s), with room for a loaded machine: far from a minute.
    assert all(elapsed < 2 * DEADLINE + 4.0 for _, elapsed in outcomes), outcomes


def test_a_client_has_at_most_two_searches_in_flight(deep_server: ServerProcess) -> None:
    async def three_at_once() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=deep_server.base_url, timeout=60) as client:
            return list(
                await asyncio.gather(
                    *(client.get("/search/jsonpath", params={"query": PATHOLOGICAL_JSONPATH}) for _ in range(3))
                )
            )

    answers = asyncio.run(three_at_once())
    refused = [answer for answer in answers if answer.status_code == 429]
    assert len(refused) == 1, [answer.status_code for answer in answers]
    assert refused[0].headers["content-type"].startswith("application/problem+json")
    assert "REGISTRY_JSONPATH_CLIENT_CONCURRENCY" in refused[0].json()["detail"]
    assert int(refused[0].headers["retry-after"]) >= 1
