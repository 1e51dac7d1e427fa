"""Every Content-Type the directory sends parses with a parser as strict as Go's ``mime.ParseMediaType`` (Prometheus
3 refuses a scrape whose media type repeats a parameter), and ``/metrics`` speaks both exposition formats."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_prometheus_text

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client
from tests.support.media_types import MediaTypeError, parse_media_type
from tests.support.servers import fresh_database

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
AGENT_ID = "urn:test:media-types:agent"

#: What Prometheus 3 sends when it scrapes (scrape_protocols at their defaults).
PROMETHEUS_3_ACCEPT = (
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,"
    "application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,"
    "text/plain;version=0.0.4;q=0.2,*/*;q=0.1"
)


@pytest.fixture(scope="module")
def own_database_url_module(postgres_admin_url: str) -> Iterator[str]:
    with fresh_database(postgres_admin_url) as url:
        yield url


@pytest.fixture(scope="module")
async def client(own_database_url_module: str) -> AsyncIterator[AsyncTestClient[object]]:
    app = create_app(Settings(database_url=own_database_url_module, db_pool_size=3))
    async with local_client(app) as client:
        document = {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": AGENT_ID}
        created = await client.put(
            f"/things/{AGENT_ID}", content=json.dumps(document), headers={"Content-Type": "application/td+json"}
        )
        assert created.status_code == 201, created.text
        yield client


def test_the_strict_parser_refuses_what_go_refuses() -> None:
    assert parse_media_type("text/plain; version=1.0.0; charset=utf-8") == (
        "text/plain",
        {"version": "1.0.0", "charset": "utf-8"},
    )
    for bad in ("text/plain; charset=utf-8; charset=utf-8", "text/plain; version", "text", "text/plain;; a=b"):
        with pytest.raises(MediaTypeError):
            parse_media_type(bad)


@pytest.mark.parametrize(
    ("accept", "expected", "parse"),
    [
        ("", "text/plain", parse_prometheus_text),
        ("text/plain", "text/plain", parse_prometheus_text),
        (PROMETHEUS_3_ACCEPT, "application/openmetrics-text", parse_openmetrics),
        ("application/openmetrics-text; version=1.0.0", "application/openmetrics-text", parse_openmetrics),
    ],
)
async def test_metrics_answer_one_valid_media_type_per_accept(
    client: AsyncTestClient[object], accept: str, expected: str, parse: object
) -> None:
    answer = await client.get("/metrics", headers={"Accept": accept} if accept else {})
    assert answer.status_code == 200
    assert len(answer.headers.get_list("content-type")) == 1
    media_type, parameters = parse_media_type(answer.headers["content-type"])
    assert media_type == expected
    assert parameters["charset"] == "utf-8"
    families = {family.name for family in parse(answer.text)}  # type: ignore[operator]
    assert any(name.startswith("registry_") for name in families)


@pytest.mark.parametrize(
    ("path", "accept"),
    [
        ("/things", ""),
        (f"/things/{AGENT_ID}", ""),
        ("/.well-known/wot", ""),
        ("/livez", ""),
        ("/readyz", ""),
        ("/api/v1/search?q=weather", ""),
        ("/api/v1/facets", ""),
        ("/search/stats", ""),
        ("/search/sparql?query=SELECT%20*%20WHERE%20%7B%3Fs%20%3Fp%20%3Fo%7D%20LIMIT%201", "text/csv"),
        ("/search/sparql?query=SELECT%20*%20WHERE%20%7B%3Fs%20%3Fp%20%3Fo%7D%20LIMIT%201", "text/tab-separated-values"),
        ("/search/sparql?query=CONSTRUCT%20WHERE%20%7B%3Fs%20%3Fp%20%3Fo%7D%20LIMIT%201", "text/turtle"),
        ("/things/urn:test:media-types:missing", ""),
        ("/dashboard/", ""),
        ("/schema/openapi.json", ""),
    ],
)
async def test_every_content_type_parses_strictly(client: AsyncTestClient[object], path: str, accept: str) -> None:
    answer = await client.get(path, headers={"Accept": accept} if accept else {})
    assert answer.status_code != 500, answer.text
    values = answer.headers.get_list("content-type")
    assert len(values) == 1, values
    parse_media_type(values[0])
