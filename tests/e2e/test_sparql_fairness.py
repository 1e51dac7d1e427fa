"""SPARQL is shared fairly: one client's runaway queries, each stopped by killing the query worker, cost another
client nothing it would notice; while the worker restarts or its index catches up, a query is told to retry at once
(503 + Retry-After), and /readyz keeps the replica in rotation (SPARQL degraded)."""

from __future__ import annotations

import math
import os
import re
import signal
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from registry.sparql.worker.client import GRACE, READY_WAIT
from tests.support.servers import ServerProcess, sparql_workers, wait_until
from tests.support.things import thing

#: Runs for hours over a few dozen descriptions (a cross product of their triples, four times), and answers nothing
#: before it ends: only killing the worker stops it.
RUNAWAY = "SELECT (COUNT(*) AS ?c) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
SIMPLE = "SELECT ?t WHERE { GRAPH <urn:test:fair> { ?a td:title ?t } }"
#: Simple queries the other client sends while the runaways are in flight, one after the other.
QUERIES = 40
#: REGISTRY_SPARQL_TIMEOUT of the fair server, seconds: a runaway holds its thread this long plus GRACE before its
#: worker is replaced, which is what a query queued behind it would wait.
TIMEOUT = 2.0
#: Seconds a loaded machine may add to an answer that comes at once (the suite runs four processes and their servers
#: on two cores; the runaways' worker restarts take CPU too).
SLACK = 3.0


def client_at(base_url: str, address: str) -> httpx.Client:
    """A client whose requests come from ``address`` (another loopback address: another anonymous client)."""
    return httpx.Client(base_url=base_url, timeout=60, transport=httpx.HTTPTransport(local_address=address))


def restarts(http: httpx.Client) -> float:
    found = re.search(r"^registry_sparql_worker_restarts_total (\S+)$", http.get("/metrics").text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


class Runaways:
    """``count`` runaway queries kept in flight by one client (each sent again as soon as it is answered)."""

    def __init__(self, base_url: str, count: int) -> None:
        self.base_url = base_url
        self.statuses: list[int] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(count)]

    def _run(self) -> None:
        with client_at(self.base_url, "127.0.0.2") as http:
            while not self._stop.is_set():
                self.statuses.append(http.get("/search/sparql", params={"query": RUNAWAY}).status_code)

    def __enter__(self) -> Runaways:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)


@pytest.fixture
def fair_server(own_database_url: str, start_server: Callable[..., ServerProcess]) -> ServerProcess:
    server = start_server(
        {"REGISTRY_SPARQL_TIMEOUT": f"{TIMEOUT:g}", "REGISTRY_SPARQL_START": "eager"}, database=own_database_url
    )
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        assert http.put("/things/urn:test:fair", json=thing("Fair", id="urn:test:fair")).status_code == 201
        padding = [thing(f"Padding {index}") for index in range(40)]
        assert http.post("/api/v1/things/batch", json=padding).json()["written"] == 40
    return server


@pytest.mark.parametrize("in_flight", [2, 8])
def test_runaway_queries_of_one_client_leave_another_clients_queries_fast(
    fair_server: ServerProcess, in_flight: int
) -> None:
    with client_at(fair_server.base_url, "127.0.0.3") as other:
        before = restarts(other)
        latencies: list[float] = []
        with Runaways(fair_server.base_url, in_flight) as runaways:
            time.sleep(1.5)  # the runaways hold their share of the worker
            # QUERIES queries, and more until the runaways have had the worker replaced twice (a loaded machine
            # takes longer to): the queries are measured across replacements, and an attack that never has the
            # worker replaced ends at the deadline and fails below.
            deadline = time.monotonic() + 90
            while len(latencies) < QUERIES or (restarts(other) - before < 2 and time.monotonic() < deadline):
                started = time.monotonic()
                answer = other.get("/search/sparql", params={"query": SIMPLE})
                latencies.append(time.monotonic() - started)
                assert answer.status_code == 200, answer.text
                assert [row["t"]["value"] for row in answer.json()["results"]["bindings"]] == ["Fair"]
                time.sleep(0.2)
        killed = restarts(other) - before
        # The workers that took over follow the change log: a write after the attack is seen.
        later = thing("Later", id="urn:test:fair:later")
        assert other.put(f"/things/{later['id']}", json=later).status_code == 201
        ask = {"query": f"ASK {{ <{later['id']}> td:title ?t }}"}
        deadline = time.monotonic() + 10  # a replacement may still be under way: 503 with Retry-After meanwhile
        while (answer := other.get("/search/sparql", params=ask)).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert answer.status_code == 200, answer.text
        assert answer.json()["boolean"] is True, answer.text
    latencies.sort()
    p95 = latencies[math.ceil(0.95 * len(latencies)) - 1]  # nearest rank
    median = latencies[len(latencies) // 2]
    print(f"{in_flight} runaways in flight, {killed:g} worker restarts: median {median:.3f} s, p95 {p95:.3f} s")
    assert killed >= 2, f"the runaways had the worker replaced {killed} times: the attack did not happen"
    assert set(runaways.statuses) == {503}
    # A query served in turn answers in milliseconds on an idle machine, at worst a few hundred on a loaded one. A
    # query queued behind the runaways waits for one to be stopped: up to TIMEOUT + GRACE (3 s) behind one, several
    # times that behind eight, so most such queries wait a second or more and the slowest about 3 s or more. The
    # median catches queries that wait their turn behind the runaways; the p95, kept below TIMEOUT + GRACE, catches
    # a share of them doing so (two of the forty may still meet a worker being replaced on a loaded machine).
    shown = [round(latency, 2) for latency in latencies]
    assert median <= 0.5, f"median {median:.2f} s; latencies {shown}"
    assert p95 < TIMEOUT + GRACE - 0.5, f"p95 {p95:.2f} s; latencies {shown}"
    assert "could not hand over" not in fair_server.output()


def test_a_query_while_the_worker_restarts_is_answered_within_two_seconds(fair_server: ServerProcess) -> None:
    """Within READY_WAIT (1 s) by design; the test allows a loaded machine more (see the bound)."""
    with httpx.Client(base_url=fair_server.base_url, timeout=30) as http:
        for _ in range(3):
            wait_until(lambda: len(sparql_workers(fair_server)) == 1, 30, "a worker holds the index")
            (worker,) = sparql_workers(fair_server)
            os.kill(worker, signal.SIGKILL)
            started = time.monotonic()
            answer = http.get("/search/sparql", params={"query": SIMPLE})
            took = time.monotonic() - started
            print(f"answered {answer.status_code} {took:.3f} s after the worker was killed")
            # Within READY_WAIT (the standby takes over, or 503) with room for a loaded machine; still fails a query
            # held for the worker's handover (10 s), its replacement's query timeout and grace, or never answered.
            assert took <= READY_WAIT + SLACK, f"answered after {took:.2f} s"
            if answer.status_code == 503:
                assert int(answer.headers["retry-after"]) > 0
                assert answer.headers["content-type"].startswith("application/problem+json")
            else:
                assert answer.status_code == 200, answer.text
            time.sleep(1)
