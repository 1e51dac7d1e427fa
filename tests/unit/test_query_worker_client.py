"""The server answers before its SPARQL worker is ready: queries get 503 with Retry-After meanwhile."""

from __future__ import annotations

import time

import pytest

from registry.config import Settings
from registry.errors import ServiceUnavailable
from registry.sparql.worker import client
from registry.sparql.worker.client import QueryWorker

#: A database nothing listens on (port 9): a worker can never be ready.
NOWHERE = "postgresql://postgres@127.0.0.1:9/none"


async def test_start_returns_at_once_and_queries_are_told_to_retry(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setattr(client, "READY_WAIT", 0.2)
    # A worker that can never be ready (nothing listens on port 9): the server must not wait for it.
    settings = Settings(database_url=NOWHERE, data_dir=tmp_path, sparql_start="eager")  # type: ignore[arg-type]
    worker = QueryWorker(settings)
    await worker.start()
    try:
        assert not worker.idle
        assert not worker.ready
        with pytest.raises(ServiceUnavailable) as raised:
            await worker.query("ASK {}", "*/*", [], [])
        assert raised.value.headers["Retry-After"]
        assert "catching up" in raised.value.detail
    finally:
        await worker.stop()


async def test_on_demand_the_first_query_starts_the_worker_and_waits_up_to_the_query_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setattr(client, "READY_WAIT", 0.1)
    settings = Settings(database_url=NOWHERE, data_dir=tmp_path, sparql_timeout=1.0)  # type: ignore[arg-type]
    worker = QueryWorker(settings)
    await worker.start()
    try:
        assert worker.idle
        assert worker.unready_reason() is None  # idle is not unready: a query starts it
        with pytest.raises(ServiceUnavailable):
            await worker.stats()  # figures do not start it
        assert worker.idle
        started = time.monotonic()
        with pytest.raises(ServiceUnavailable) as raised:
            await worker.query("ASK {}", "*/*", [], [])
        assert time.monotonic() - started >= 0.9  # the query timeout, not READY_WAIT
        assert raised.value.headers["Retry-After"]
        assert not worker.idle
        started = time.monotonic()
        with pytest.raises(ServiceUnavailable):
            await worker.query("ASK {}", "*/*", [], [])
        assert time.monotonic() - started < 0.9  # later queries wait READY_WAIT, as while it restarts
    finally:
        await worker.stop()
