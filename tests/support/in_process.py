"""The in-process test client, as a local client reaches the directory."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

#: The directory answers only to its own names (REGISTRY_ALLOWED_HOSTS): the test client's default host,
#: testserver.local, is not one of them.
LOCAL_BASE_URL = "http://127.0.0.1:8080"


def local_client(app: Litestar, **options: Any) -> AsyncTestClient[Litestar]:
    """``AsyncTestClient`` of ``app`` sending ``Host: 127.0.0.1:8080``."""
    return AsyncTestClient(app=app, base_url=LOCAL_BASE_URL, **options)


async def until_sparql_answers(client: AsyncTestClient[Litestar], within: float = 60) -> None:
    """Wait until the app's SPARQL worker has started and caught up, as a load balancer would (SPARQL answers 503
    with Retry-After until then)."""
    deadline = time.monotonic() + within
    while not (await client.get("/readyz")).json()["checks"]["sparql_worker"]["ok"]:
        assert time.monotonic() < deadline, f"the SPARQL worker did not answer within {within:g} s"
        await asyncio.sleep(0.1)
