"""Health: /livez, /readyz, and a database outage answered 503 + Retry-After everywhere, recovered without restart.

The outage tests run a PostgreSQL cluster of their own (never the machine's shared one) and stop it under load.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.support.servers import ServerProcess, ThrowawayPostgres, sparql_workers, wait_until
from tests.support.things import thing


def test_livez_and_readyz_on_a_healthy_server(client: httpx.Client) -> None:
    live = client.get("/livez")
    assert live.status_code == 200
    assert live.json() == {"status": "alive"}
    # The server answers at once; it is ready when its SPARQL index has caught up (at once, or shortly after).
    deadline = time.monotonic() + 20
    while (ready := client.get("/readyz")).status_code == 503 and time.monotonic() < deadline:
        assert ready.json()["checks"]["sparql_worker"]["ok"] is False
        time.sleep(0.1)
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["status"] == "ready"
    assert set(body["checks"]) == {"database", "sparql_worker", "change_feed", "embeddings", "search_words"}
    assert all(check["ok"] for check in body["checks"].values())
    # Without pgvector (this PostgreSQL) needs are answered lexically: degraded, and the process ready all the same
    assert body["checks"]["embeddings"]["state"] in {"ok", "degraded"}
    # The full-text words of descriptions stored under another product list are refreshed meanwhile: degraded until
    # then, not unready.
    assert body["checks"]["search_words"]["state"] in {"ok", "degraded"}


@pytest.fixture
def cluster() -> Iterator[ThrowawayPostgres]:
    if not ThrowawayPostgres.available():
        pytest.skip("PostgreSQL 15 binaries (initdb, pg_ctl) are not installed")
    with ThrowawayPostgres.migrated() as postgres:
        yield postgres


@pytest.fixture
def outage_server(cluster: ThrowawayPostgres) -> Iterator[ServerProcess]:
    # The SPARQL worker starts with the server: some of these tests are about it running through an outage.
    env = {"REGISTRY_PURGE_INTERVAL": "1", "REGISTRY_FEED_POLL_INTERVAL": "0.5", "REGISTRY_SPARQL_START": "eager"}
    with ServerProcess(cluster.url, env) as process:
        yield process


def _anonymous() -> dict[str, object]:
    return {key: value for key, value in thing("Anonymous").items() if key != "id"}


#: One request per kind of endpoint: reads, writes, listings, search, discovery, leases, the dashboard's feeds.
def _requests(thing_id: str) -> list[tuple[str, str, dict[str, object]]]:
    return [
        ("GET", f"/things/{thing_id}", {}),
        ("GET", "/things", {}),
        ("PUT", f"/things/{thing_id}", {"json": thing("Outage", id=thing_id)}),
        ("POST", "/things", {"json": _anonymous(), "headers": {"content-type": "application/td+json"}}),
        ("DELETE", "/things/urn:test:not-there", {}),
        ("GET", "/search/jsonpath", {"params": {"query": "$[*].title"}}),
        ("GET", "/api/v1/search", {"params": {"q": "weather"}}),
        ("GET", "/api/v1/facets", {}),
        ("GET", f"/api/v1/things/{thing_id}/summary", {}),
        ("GET", f"/api/v1/things/{thing_id}/versions", {}),
        ("POST", "/api/v1/resolve", {"json": {"requirements": [{"capability": "weather"}]}}),
    ]


#: The status recorded for an answer the server cut short.
CUT = 0


class Load:
    """Requests in a loop on a background thread, every answer recorded."""

    def __init__(self, base_url: str, thing_id: str) -> None:
        self.base_url = base_url
        self.thing_id = thing_id
        self.answers: list[tuple[str, str, int, str | None]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=30) as http:
            while not self._stop.is_set():
                for method, path, options in _requests(self.thing_id):
                    try:
                        response = http.request(method, path, **options)  # type: ignore[arg-type]
                    except httpx.RemoteProtocolError:
                        # A streamed listing whose 200 was sent before the outage can only be cut short: recorded
                        # (status CUT), and the load goes on instead of its thread dying with it.
                        self.answers.append((method, path, CUT, None))
                        continue
                    self.answers.append((method, path, response.status_code, response.headers.get("retry-after")))

    def __enter__(self) -> Load:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


def _wait_for(condition: Callable[[], object], within: float, what: str) -> None:
    wait_until(condition, within, what, tolerating=(httpx.HTTPError,))


def test_database_outage_is_503_with_retry_after_and_recovers_without_restart(
    cluster: ThrowawayPostgres, outage_server: ServerProcess
) -> None:
    thing_id = "urn:test:outage"
    with httpx.Client(base_url=outage_server.base_url, timeout=30) as http:
        assert http.put(f"/things/{thing_id}", json=thing("Before", id=thing_id)).status_code == 201
        with Load(outage_server.base_url, thing_id) as load:
            time.sleep(1)
            cluster.stop()
            _wait_for(lambda: http.get(f"/things/{thing_id}").status_code == 503, 15, "reads answer 503")
            time.sleep(2)
            outage = {
                (method, path): http.request(method, path, **options)  # type: ignore[arg-type]
                for method, path, options in _requests(thing_id)
            }
            ready = http.get("/readyz")
            assert http.get("/livez").status_code == 200
            cluster.start()
            _wait_for(lambda: http.get(f"/things/{thing_id}").status_code == 200, 30, "reads recover")
            _wait_for(lambda: http.get("/readyz").status_code == 200, 30, "/readyz recovers")
            time.sleep(1)
        for (method, path), response in outage.items():
            assert response.status_code == 503, (method, path, response.status_code, response.text)
            assert response.headers["content-type"].startswith("application/problem+json")
            assert int(response.headers["retry-after"]) > 0, (method, path)
        assert ready.status_code == 503
        assert ready.headers["retry-after"]
        problem = ready.json()
        assert "database" in problem["detail"]
        assert problem["checks"]["database"]["ok"] is False
        failures = [answer for answer in load.answers if answer[2] >= 500]
        assert failures, "the load saw no outage at all"
        assert all(status == 503 and retry_after for _, _, status, retry_after in failures), failures
        cut = {(method, path) for method, path, status, _ in load.answers if status == CUT}
        assert cut <= {("GET", "/things")}, f"only the streamed listing may be cut short: {cut}"
        # Full service again, writes included, without a restart of the server.
        assert outage_server.process is not None
        assert outage_server.process.poll() is None
        assert http.put(f"/things/{thing_id}", json=thing("After", id=thing_id)).status_code == 204
        assert http.get(f"/things/{thing_id}").json()["title"] == "After"
    # The directory's line for a request that got a 500 (registry/http/problems.py). Not any "unhandled error":
    # a listing cut short by the outage ends in uvicorn's traceback of anyio's "unhandled errors in a TaskGroup".
    unhandled = [line for line in outage_server.output().splitlines() if "unhandled error on " in line]
    assert not unhandled, unhandled


def test_a_killed_sparql_worker_leaves_the_replica_ready_while_things_keep_working(
    outage_server: ServerProcess,
) -> None:
    thing_id = "urn:test:worker"
    with httpx.Client(base_url=outage_server.base_url, timeout=30) as http:
        assert http.put(f"/things/{thing_id}", json=thing("Worker", id=thing_id)).status_code == 201
        (worker,) = sparql_workers(outage_server)
        os.kill(worker, signal.SIGKILL)
        probes: list[httpx.Response] = []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            probes.append(http.get("/readyz"))
        # The replica stays in rotation: SPARQL is reported (degraded while the next worker takes over), not counted.
        assert all(probe.status_code == 200 for probe in probes), [
            probe.text for probe in probes if probe.status_code != 200
        ]
        for probe in probes:
            sparql = probe.json()["checks"]["sparql_worker"]
            if not sparql["ok"]:
                assert probe.json()["status"] == "ready, degraded"
                assert "SPARQL queries are answered 503 with Retry-After meanwhile" in sparql["detail"]
        assert http.get(f"/things/{thing_id}").status_code == 200
        assert http.put(f"/things/{thing_id}", json=thing("Still", id=thing_id)).status_code == 204
        _wait_for(lambda: http.get("/readyz").json()["status"] == "ready", 30, "/readyz says ready again")
        answer = http.get("/search/sparql", params={"query": "ASK { ?s ?p ?o }"})
        assert answer.status_code == 200, answer.text
