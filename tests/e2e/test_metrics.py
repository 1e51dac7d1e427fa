"""/metrics: the Prometheus text format, parsed by prometheus_client's own parser, with counters that move."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.things import thing

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _scrape(client: httpx.Client) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_move_with_requests(client: httpx.Client) -> None:
    before = _scrape(client)
    created = thing("Metered", registration={"ttl": 120})
    assert client.put(f"/things/{created['id']}", json=created).status_code == 201
    assert client.get(f"/things/{created['id']}").status_code == 200
    assert client.get(f"/things/{created['id']}").status_code == 200
    invalid = client.put("/things/urn:test:invalid", json={"title": 5})
    assert invalid.status_code == 400
    assert client.get("/search/sparql", params={"query": "ASK { ?s ?p ?o }"}).status_code == 200
    after = _scrape(client)

    route = {"app_name": "lmos-registry", "method": "GET", "path": "/things/{thing_id}", "status_code": "200"}
    assert (
        _value(after, "registry_http_requests_total", **route) - _value(before, "registry_http_requests_total", **route)
        >= 2
    )
    assert _value(after, "registry_http_request_duration_seconds_count", **route) >= 2
    assert any(name == "registry_http_request_duration_seconds_bucket" for name, _ in after)
    assert _value(after, "registry_registrations_total", outcome="created") > _value(
        before, "registry_registrations_total", outcome="created"
    )
    assert _value(after, "registry_failed_validations_total") > _value(before, "registry_failed_validations_total")
    assert _value(after, "registry_sparql_queries_total") > _value(before, "registry_sparql_queries_total")
    assert _value(after, "registry_leases_expiring_soon") >= 1
    assert _value(after, "registry_descriptions", kind="thing") >= 1
    assert _value(after, "registry_database_up") == 1
    assert _value(after, "registry_db_pool_connections") >= 1
    for gauge in (
        "registry_db_pool_in_use",
        "registry_db_pool_waiting",
        "registry_sse_subscribers",
        "registry_sparql_index_lag_changes",
        "registry_change_feed_lag_seconds",
    ):
        assert (gauge, frozenset()) in after, gauge
    for counter in (
        "registry_purged_descriptions_total",
        "registry_sse_dropped_subscribers_total",
        "registry_sparql_timeouts_total",
        "registry_sparql_worker_restarts_total",
    ):
        assert (counter, frozenset()) in after, counter


def test_sse_subscribers_are_counted(client: httpx.Client, base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as stream_client, stream_client.stream("GET", "/events") as stream:
        assert stream.status_code == 200
        assert _value(_scrape(client), "registry_sse_subscribers") >= 1
