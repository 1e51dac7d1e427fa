"""`registry serve --workers 2`: the server processes share one SPARQL worker and its on-disk index."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from tests.support.servers import sparql_workers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _sparql_workers(server: Any) -> list[psutil.Process]:
    """The SPARQL workers under the server that hold an index (not the standby waiting for its turn)."""
    return [psutil.Process(pid) for pid in sparql_workers(server)]


def _answered_by_every_process(base_url: str, thing_id: str, queries: int = 24) -> set[int]:
    """Ask on fresh connections (the kernel spreads them over the processes); the pids of the answering processes
    are not visible, so every answer must be right and none refused."""
    query = f"SELECT ?n WHERE {{ GRAPH <{thing_id}> {{ ?a td:hasActionAffordance/td:name ?n }} }}"
    statuses = set()
    for _ in range(queries):
        with httpx.Client(base_url=base_url, timeout=30) as client:
            response = client.get("/search/sparql", params={"query": query})
            statuses.add(response.status_code)
            if response.status_code == 200:
                assert response.json()["results"]["bindings"], response.text
    return statuses


def _until_answered(base_url: str, thing_id: str, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while _answered_by_every_process(base_url, thing_id, queries=6) != {200}:
        assert time.monotonic() < deadline, "SPARQL was not answered by every server process"
        time.sleep(0.5)


def _register_weather_agent(base_url: str, thing_id: str) -> str:
    """Register the WeatherAgent as ``thing_id`` and wait until SPARQL answers for it; returns the id."""
    document = {**json.loads((FIXTURES / "weather-agent.td.json").read_text()), "id": thing_id}
    with httpx.Client(base_url=base_url, timeout=30) as client:
        response = client.put(f"/things/{thing_id}", json=document, headers={"content-type": "application/td+json"})
        assert response.status_code == 201
    _until_answered(base_url, thing_id)
    return thing_id


def test_two_server_processes_share_one_sparql_worker(own_database_url: str, start_server: Any) -> None:
    server = start_server({"REGISTRY_WORKERS": "2"}, database=own_database_url)
    thing_id = _register_weather_agent(server.base_url, "urn:test:shared-sparql-worker")
    assert _answered_by_every_process(server.base_url, thing_id) == {200}
    workers = _sparql_workers(server)
    assert len(workers) == 1, [worker.cmdline() for worker in workers]
    assert "building one in" not in server.output(), "a second index was built"

    # The process running the worker ends: the other one takes over with the on-disk index.
    runner = workers[0].parent()
    assert runner is not None
    os.kill(runner.pid, signal.SIGKILL)
    _until_answered(server.base_url, thing_id)
    assert len(_sparql_workers(server)) == 1
    assert "building one in" not in server.output(), "the process that took over built another index"


def test_directories_of_two_databases_on_one_data_directory_answer_from_their_own_index(
    own_database_url: str, database_url: str, start_server: Any, tmp_path: Path
) -> None:
    """Two directories on one machine with the same (say, the default) data directory: each runs its own worker
    on its own database; neither relays to the other's nor answers from its index."""
    shared = {"REGISTRY_DATA_DIR": str(tmp_path)}
    first = start_server(shared, database=own_database_url)
    second = start_server(shared, database=database_url)
    thing_id = _register_weather_agent(first.base_url, "urn:test:one-database-only")
    query = f"ASK {{ GRAPH <{thing_id}> {{ ?s ?p ?o }} }}"
    with httpx.Client(base_url=second.base_url, timeout=30) as client:
        deadline = time.monotonic() + 60
        while (answer := client.get("/search/sparql", params={"query": query})).status_code == 503:
            assert time.monotonic() < deadline, answer.text
            time.sleep(0.5)
        assert answer.status_code == 200, answer.text
        assert answer.json()["boolean"] is False
    assert len(_sparql_workers(first)) == len(_sparql_workers(second)) == 1
