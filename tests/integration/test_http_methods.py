"""``OPTIONS`` on every route lists every method of the route in ``Allow`` (``HEAD`` wherever ``GET`` is), and a
405 names them too, as a generic HTTP client expects (RFC 9110 §9.3.7, §15.5.6)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

import pytest
from litestar.routes import HTTPRoute
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client
from tests.support.servers import fresh_database

_PARAMETER = re.compile(r"\{[^}]+\}")


@pytest.fixture(scope="module")
def own_database_url_module(postgres_admin_url: str) -> Iterator[str]:
    with fresh_database(postgres_admin_url) as url:
        yield url


@pytest.fixture(scope="module")
async def client(own_database_url_module: str) -> AsyncIterator[AsyncTestClient[object]]:
    app = create_app(Settings(database_url=own_database_url_module, db_pool_size=3))
    async with local_client(app) as client:
        yield client


def _routes() -> list[tuple[str, set[str]]]:
    app = create_app(Settings(database_url="postgresql://unused@127.0.0.1/unused"))
    methods: dict[str, set[str]] = {}
    for route in app.routes:
        if isinstance(route, HTTPRoute) and not route.path_format.startswith("/schema"):
            methods.setdefault(route.path_format, set()).update(route.methods)
    return sorted(methods.items())


def _concrete(path_format: str) -> str:
    """A request path for a route; ids with ``/`` exercise the rewrite of ids into one segment."""
    path = path_format.replace("{server_name:str}", "io.github.example/weather").replace("{version:str}", "1.0.0")
    path = path.replace("{thing_id:str}", "https://example.com/agents/a")
    return _PARAMETER.sub("x", path)


@pytest.mark.parametrize(("path_format", "methods"), _routes(), ids=[path for path, _ in _routes()])
async def test_options_lists_every_method_of_the_route(
    client: AsyncTestClient[object], path_format: str, methods: set[str]
) -> None:
    answer = await client.options(_concrete(path_format))
    assert answer.status_code == 204, answer.text
    allowed = {method.strip() for method in answer.headers["allow"].split(",")}
    assert allowed == methods | ({"HEAD"} if "GET" in methods else set())


async def test_a_method_the_route_lacks_gets_405_with_allow(client: AsyncTestClient[object]) -> None:
    answer = await client.delete("/things")
    assert answer.status_code == 405
    assert {"GET", "POST"} <= {method.strip() for method in answer.headers["allow"].split(",")}
    assert answer.headers["content-type"].startswith("application/problem+json")
