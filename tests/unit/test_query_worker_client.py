"""The server answers before its SPARQL worker is ready: queries get 503 with Retry-After meanwhile."""

from __future__ import annotations

import pytest

from registry.config import Settings
from registry.errors import ServiceUnavailable
from registry.sparql.worker import client
from registry.sparql.worker.client import QueryWorker


async def test_start_returns_at_once_and_queries_are_told_to_retry(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setattr(client, "READY_WAIT", 0.2)
    # A worker that can never be ready (nothing listens on port 9): the server must not wait for it.
    worker = QueryWorker(Settings(database_url="postgresql://postgres@127.0.0.1:9/none", data_dir=tmp_path))  # type: ignore[arg-type]
    await worker.start()
    try:
        assert not worker.ready
        with pytest.raises(ServiceUnavailable) as raised:
            await worker.query("ASK {}", "*/*", [], [])
        assert raised.value.headers["Retry-After"]
        assert "catching up" in raised.value.detail
    finally:
        await worker.stop()
