"""Create-only PUT (``If-None-Match: *``, RFC 9110) and the capped ``Registry-Notices`` header, in-process."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TD = {"Content-Type": "application/td+json"}


def agent(thing_id: str, actions: int = 1) -> dict[str, Any]:
    document = {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": thing_id}
    template = next(iter(document["actions"].values()))
    # camelCase names without descriptions: each action earns lint notices.
    document["actions"] = {f"doThing{index}": copy.deepcopy(template) for index in range(actions)}
    return document


@pytest.fixture(scope="module")
async def client(database_url: str) -> AsyncIterator[AsyncTestClient]:  # type: ignore[type-arg]
    settings = Settings(database_url=database_url, db_pool_size=3, max_notice_header_bytes=2048)
    async with local_client(create_app(settings), timeout=60) as test_client:
        yield test_client


async def test_if_none_match_star_creates_only(client: AsyncTestClient) -> None:  # type: ignore[type-arg]
    thing_id = "urn:test:conditional:1"
    body = json.dumps(agent(thing_id))
    headers = {**TD, "If-None-Match": "*"}
    created = await client.put(f"/things/{thing_id}", content=body, headers=headers)
    assert created.status_code == 201, created.text
    again = await client.put(f"/things/{thing_id}", content=body.replace("Weather", "Other"), headers=headers)
    assert again.status_code == 412
    assert again.headers["content-type"].startswith("application/problem+json")
    assert again.headers["etag"] == created.headers["etag"]
    stored = await client.get(f"/things/{thing_id}")
    assert stored.headers["etag"] == created.headers["etag"]
    unsupported = await client.put(f"/things/{thing_id}", content=body, headers={**TD, "If-None-Match": '"v1"'})
    assert unsupported.status_code == 400


async def test_notices_header_is_capped_and_the_body_has_them_all(client: AsyncTestClient) -> None:  # type: ignore[type-arg]
    thing_id = "urn:test:conditional:many-notices"
    response = await client.put(f"/things/{thing_id}", content=json.dumps(agent(thing_id, 300)), headers=TD)
    assert response.status_code == 201, response.text
    header = response.headers["registry-notices"]
    assert len(header.encode()) <= 2048
    total = int(response.headers["registry-notices-total"])
    everything = response.json()["notices"]
    assert len(everything) == total > len(json.loads(header)) >= 1
    assert json.loads(header) == everything[: len(json.loads(header))]
    replaced = await client.put(f"/things/{thing_id}", content=json.dumps(agent(thing_id, 300)), headers=TD)
    assert replaced.status_code == 200  # not 204: the full list needs a body
    assert len(replaced.json()["notices"]) == total


async def test_few_notices_stay_in_the_header(client: AsyncTestClient) -> None:  # type: ignore[type-arg]
    thing_id = "urn:test:conditional:few-notices"
    await client.put(f"/things/{thing_id}", content=json.dumps(agent(thing_id, 1)), headers=TD)
    replaced = await client.put(f"/things/{thing_id}", content=json.dumps(agent(thing_id, 1)), headers=TD)
    assert replaced.status_code == 204
    assert "registry-notices-total" not in replaced.headers
    assert json.loads(replaced.headers["registry-notices"])
