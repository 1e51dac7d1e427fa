"""SPARQL while it cannot answer: right after a start with an index to build, and with PostgreSQL down. A query is
told to retry at once (503 + Retry-After, naming the cause), never held for long; /readyz keeps the replica in
rotation while only SPARQL is behind."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from registry.directory.search import DATABASE_PROBE_TIMEOUT
from registry.sparql.worker.client import READY_WAIT
from tests.support.servers import ServerProcess, ThrowawayPostgres, sparql_workers, wait_until
from tests.support.things import thing

ASK = "ASK { ?s ?p ?o }"
WEATHER = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "weather-agent.td.json").read_text())
#: Descriptions whose index a new replica builds: seconds of work, on any machine.
COUNT = 1500
#: Seconds a loaded machine may add to an answer designed to come within READY_WAIT (and the database probe): the
#: suite runs four processes and their servers on two cores. What "held for long" would cost is far more: the
#: index build (the 503 must come before it, and the test waits for it afterwards), a stuck query's handover
#: (10 s), the SPARQL timeout (10 s) or the database's command timeout (30 s).
SLACK = 3.0


#: The worker starts with the server, as these tests are about a worker that starts or is down.
EAGER = {"REGISTRY_SPARQL_START": "eager"}


def timed_query(http: httpx.Client) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    answer = http.get("/search/sparql", params={"query": ASK})
    return answer, time.monotonic() - started


def test_right_after_start_the_replica_is_ready_with_sparql_degraded_and_queries_told_to_retry(
    own_database_url: str,
) -> None:
    with ServerProcess(own_database_url, EAGER) as first, httpx.Client(base_url=first.base_url, timeout=60) as http:
        for start in range(0, COUNT, 500):
            batch = [{**WEATHER, "id": f"urn:test:catalogue:{index}"} for index in range(start, start + 500)]
            assert http.post("/api/v1/things/batch", json=batch).json()["written"] == 500
    # Another replica, with an index of its own to build from the descriptions.
    second = ServerProcess(own_database_url, EAGER).start(wait_for_sparql=False)
    try:
        with httpx.Client(base_url=second.base_url, timeout=60) as http:
            answer, took = timed_query(http)
            print(f"answered {answer.status_code} {took:.3f} s after the start")
            assert answer.status_code == 503, answer.text
            assert took <= READY_WAIT + SLACK, f"told to retry after {took:.2f} s"
            assert int(answer.headers["retry-after"]) > 0
            assert "catching up" in answer.json()["detail"]
            probes = [http.get("/readyz")]
            while not probes[-1].json()["checks"]["sparql_worker"]["ok"]:
                time.sleep(0.05)
                probes.append(http.get("/readyz"))
                assert len(probes) < 1200, "the index was not built within a minute"
            assert all(probe.status_code == 200 for probe in probes), [probe.text for probe in probes]
            degraded = probes[0].json()
            assert degraded["status"] == "ready, degraded"
            assert "catching up" in degraded["checks"]["sparql_worker"]["detail"]
            assert degraded["checks"]["database"]["ok"] is True
            assert probes[-1].json()["status"] == "ready"
            answer, _ = timed_query(http)
            assert answer.status_code == 200, answer.text
    finally:
        second.close()


@pytest.fixture
def cluster() -> Iterator[ThrowawayPostgres]:
    if not ThrowawayPostgres.available():
        pytest.skip("PostgreSQL 15 binaries (initdb, pg_ctl) are not installed")
    with ThrowawayPostgres.migrated() as postgres:
        yield postgres


def test_with_the_database_down_a_query_is_told_quickly_that_the_database_is_the_cause(
    cluster: ThrowawayPostgres,
) -> None:
    with ServerProcess(cluster.url, EAGER) as server, httpx.Client(base_url=server.base_url, timeout=60) as http:
        assert http.put("/things/urn:test:down", json=thing("Down", id="urn:test:down")).status_code == 201
        assert timed_query(http)[0].status_code == 200
        cluster.stop()
        answers = [timed_query(http)]
        # A worker started while the database is down cannot start: the query is not told to wait for it either.
        (worker,) = sparql_workers(server)
        os.kill(worker, signal.SIGKILL)
        answers += [timed_query(http) for _ in range(3)]
        print("answers with the database down:", [(answer.status_code, round(took, 3)) for answer, took in answers])
        for answer, took in answers:
            assert answer.status_code == 503, answer.text
            assert took <= READY_WAIT + DATABASE_PROBE_TIMEOUT + SLACK, f"answered after {took:.2f} s"
            assert int(answer.headers["retry-after"]) > 0
            assert answer.json()["detail"].startswith("The database is unavailable"), answer.text
        cluster.start()
        wait_until(lambda: timed_query(http)[0].status_code == 200, 30, "SPARQL answers again")
