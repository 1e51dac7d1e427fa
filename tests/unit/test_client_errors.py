"""The SDK's errors say what to fix: every field and parameter the directory's problem names is in ``str(error)``,
and ``AgentRegistration`` logs them before it gives up."""

from __future__ import annotations

import logging

import httpx
import pytest

from registry.client import AsyncRegistryClient
from registry.client.agent_registration import AgentRegistration
from registry.client.errors import BadRequestError, problem_from

_INVALID = {
    "type": "about:blank",
    "title": "Bad Request",
    "status": 400,
    "detail": "The Thing Description is invalid: 2 problems found",
    "validationErrors": [
        {"field": "security", "description": "'security' is a required property"},
        {"field": "lmos:metadata.lmos:vendor", "description": "lmos:name must be a non-empty string"},
    ],
}


def _problem_response(problem: dict[str, object]) -> httpx.Response:
    return httpx.Response(
        int(str(problem["status"])), json=problem, headers={"Content-Type": "application/problem+json"}
    )


def test_str_lists_every_validation_error() -> None:
    error = problem_from(_problem_response(_INVALID))
    assert isinstance(error, BadRequestError)
    text = str(error)
    assert text.splitlines()[0] == "400 Bad Request: The Thing Description is invalid: 2 problems found"
    assert "  - security: 'security' is a required property" in text.splitlines()
    assert "  - lmos:metadata.lmos:vendor: lmos:name must be a non-empty string" in text.splitlines()


def test_str_lists_invalid_parameters() -> None:
    problem = {
        "title": "Bad Request",
        "status": 400,
        "detail": "Invalid query parameters",
        "invalidParams": [{"name": "limit", "reason": "must be at most 1000"}],
    }
    assert "  - parameter limit: must be at most 1000" in str(problem_from(_problem_response(problem))).splitlines()


def test_str_of_a_plain_problem_is_one_line() -> None:
    error = problem_from(_problem_response({"title": "Not Found", "status": 404, "detail": "No such id"}))
    assert str(error) == "404 Not Found: No such id"


async def test_agent_registration_logs_each_problem_before_giving_up(caplog: pytest.LogCaptureFixture) -> None:
    transport = httpx.MockTransport(lambda request: _problem_response(_INVALID))
    client = AsyncRegistryClient("http://directory.test", transport=transport)
    document = {"id": "urn:example:agent", "title": "Agent"}
    registration = AgentRegistration(client, document, ttl=30, handle_signals=False)
    with caplog.at_level(logging.ERROR, logger="registry.client.agent_registration"):
        with pytest.raises(BadRequestError):
            await registration.start()
        await registration.stop()
    await client.aclose()
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "security: 'security' is a required property" in logged
    assert "lmos:metadata.lmos:vendor: lmos:name must be a non-empty string" in logged
