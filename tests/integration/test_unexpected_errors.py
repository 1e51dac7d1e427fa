"""A bug (an unexpected exception) answers 500 problem+json and is logged once, at error level, with its traceback
and the request id the response carries."""

from __future__ import annotations

import logging

import pytest

from registry.app import create_app
from registry.config import Settings
from registry.directory.service import DirectoryService
from tests.support.in_process import local_client


async def test_an_unexpected_500_is_logged_once_with_its_traceback_and_request_id(
    own_database_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*_: object, **__: object) -> None:
        raise RuntimeError("a bug in reading a description")

    monkeypatch.setattr(DirectoryService, "get", broken)
    app = create_app(Settings(database_url=own_database_url, db_pool_size=3, response_cache_entries=0))
    async with local_client(app) as client:
        caplog.clear()
        with caplog.at_level(logging.INFO):
            answer = await client.get("/things/urn:test:bug", headers={"X-Request-ID": "req-bug-1"})
    assert answer.status_code == 500
    assert answer.headers["content-type"].startswith("application/problem+json")
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert len(errors) == 1, [record.getMessage() for record in errors]
    (logged,) = errors
    assert logged.getMessage().startswith("unhandled error on GET /things/urn%3Atest%3Abug: RuntimeError")
    assert logged.exc_info is not None
    assert "a bug in reading a description" in str(logged.exc_info[1])
    assert getattr(logged, "request_id", None) == answer.headers["x-request-id"]
