"""The SPARQL worker starts at the first SPARQL query (REGISTRY_SPARQL_START=on-demand, the default), or at start
when an index is already on disk or when told to (eager); until then no worker runs and readiness says it is idle."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import psutil
import pytest

from registry.app import create_app
from registry.config import Settings
from registry.config.fields import ConfigError
from tests.support.in_process import local_client
from tests.support.things import thing


def workers() -> set[psutil.Process]:
    """The SPARQL workers this test process runs (an in-process app's worker is its child), of earlier tests' apps
    too until they have exited."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "registry.sparql.worker" in " ".join(child.cmdline()):
                found.add(child)
    return found


async def a_new_worker(before: set[psutil.Process], within: float = 30) -> bool:
    """Whether a SPARQL worker not among ``before`` runs (within ``within`` seconds: it is started in the
    background)."""
    deadline = time.monotonic() + within
    while not workers() - before:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


async def test_no_worker_runs_until_the_first_query_which_is_answered(own_database_url: str, tmp_path: Path) -> None:
    settings = Settings(database_url=own_database_url, db_pool_size=3, sparql_index_dir=tmp_path / "index")
    assert settings.sparql_start == "on-demand"
    before = workers()
    async with local_client(create_app(settings)) as client:
        written = await client.put("/things/urn:test:on-demand", json=thing("On demand", id="urn:test:on-demand"))
        assert written.status_code == 201, written.text
        check = (await client.get("/readyz")).json()["checks"]["sparql_worker"]
        assert check["ok"] is True
        assert check["detail"].startswith("idle"), check
        assert (await client.get("/metrics")).status_code == 200
        stats = (await client.get("/search/stats")).json()
        assert (stats["indexReady"], stats["indexIdle"]) == (False, True)
        assert workers() - before == set()  # neither readiness nor figures started it
        assert not (tmp_path / "index").exists() or not any(path.is_dir() for path in (tmp_path / "index").iterdir())

        query = "SELECT ?t WHERE { GRAPH <urn:test:on-demand> { ?s td:title ?t } }"
        answer = await client.get("/search/sparql", params={"query": query}, headers={"Accept": "application/json"})
        assert answer.status_code == 200, answer.text  # the first query waits for the worker it starts
        assert [row["t"]["value"] for row in answer.json()["results"]["bindings"]] == ["On demand"]
        assert await a_new_worker(before)
        check = (await client.get("/readyz")).json()["checks"]["sparql_worker"]
        assert check["ok"] is True
        assert not check["detail"].startswith("idle"), check

    # The index is on disk now: the next start starts the worker at once.
    before = workers()
    async with local_client(create_app(settings)) as client:
        check = (await client.get("/readyz")).json()["checks"]["sparql_worker"]
        assert not check["detail"].startswith("idle"), check
        assert await a_new_worker(before)


async def test_eager_starts_the_worker_at_start(own_database_url: str, tmp_path: Path) -> None:
    settings = Settings(
        database_url=own_database_url, db_pool_size=3, sparql_index_dir=tmp_path / "index", sparql_start="eager"
    )
    before = workers()
    async with local_client(create_app(settings)) as client:
        check = (await client.get("/readyz")).json()["checks"]["sparql_worker"]
        assert not check["detail"].startswith("idle"), check
        assert await a_new_worker(before)


def test_the_start_setting_is_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REGISTRY_SPARQL_START", "Eager")
    assert Settings.from_env().sparql_start == "eager"
    monkeypatch.setenv("REGISTRY_SPARQL_START", "lazy")
    with pytest.raises(ConfigError, match="must be one of on-demand, eager"):
        Settings.from_env()
