"""The SDK's requests and response parsing, through an injected transport (no network)."""

from __future__ import annotations

import httpx
import httpx_sse
import pytest

from registry.client import (
    BadRequestError,
    DirectoryUnreachable,
    NotFoundError,
    ProblemError,
    RegistryClient,
    UnexpectedResponse,
)
from registry.client.calls import event_from, events_request, subscribe


def handler(request: httpx.Request) -> httpx.Response:
    if request.method == "PUT":
        notices = '[{"code":"lint","message":"consider a description"}]'
        return httpx.Response(201, headers={"ETag": '"7"', "Registry-Notices": notices})
    if request.url.raw_path == b"/things/urn%3Abad":
        problem = {
            "title": "Bad Request",
            "status": 400,
            "detail": "invalid",
            "validationErrors": [{"field": "/title", "description": "not a string"}],
        }
        return httpx.Response(400, json=problem, headers={"content-type": "application/problem+json"})
    return httpx.Response(404, json={"title": "Not Found", "status": 404, "detail": f"no {request.url.path}"})


def test_typed_results_and_problems() -> None:
    with RegistryClient("http://directory", transport=httpx.MockTransport(handler)) as client:
        result = client.register({"id": "urn:a", "title": "A"}, ttl=30)
        assert (result.id, result.created, result.etag) == ("urn:a", True, '"7"')
        assert result.notices[0].code == "lint"
        with pytest.raises(BadRequestError) as bad:
            client.get("urn:bad")
        assert bad.value.validation_errors[0].field == "/title"
        with pytest.raises(NotFoundError, match="no /things/urn:missing"):
            client.get("urn:missing")


def test_unreachable() -> None:
    with RegistryClient("http://127.0.0.1:9", timeout=2) as client, pytest.raises(DirectoryUnreachable):
        client.list()


def test_event_requests() -> None:
    path, params, headers = events_request(
        "thing_created", diff=True, filters={"capability": "x", "kind": None}, last_event_id=41
    )
    assert (path, params, headers["Last-Event-ID"]) == (
        "/events/thing_created",
        {"capability": "x", "diff": "true"},
        "41",
    )
    with pytest.raises(ValueError, match="event type"):
        events_request("thing_exploded", diff=False, filters={}, last_event_id=None)
    event = event_from("thing_updated", "42", '{"id":"urn:a"}')
    assert event is not None
    assert (event.seq, event.thing_id) == (42, "urn:a")
    assert event_from("message", "", "") is None


def test_problem_details_with_invalid_params_and_plain_errors() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/search":
            problem = {
                "status": 400,
                "detail": "bad",
                "invalidParams": [{"name": "kind", "reason": "one of agent"}, {"name": "limit", "reason": "≥ 1"}],
            }
            return httpx.Response(400, json=problem)
        if request.url.path == "/search/jsonpath":
            return httpx.Response(502, text="upstream broke")
        return httpx.Response(200, headers={"content-type": "application/ld+json"}, json={"@graph": []})

    with RegistryClient("http://directory", transport=httpx.MockTransport(answer)) as client:
        with pytest.raises(BadRequestError) as bad:
            client.search(kind="robot")
        assert [(param.name, param.reason) for param in bad.value.invalid_params] == [
            ("kind", "one of agent"),
            ("limit", "≥ 1"),
        ]
        with pytest.raises(ProblemError) as plain:
            client.jsonpath("$")
        assert (plain.value.status, plain.value.detail) == (502, "upstream broke")
        with pytest.raises(UnexpectedResponse, match="application/ld\\+json"):
            client.sparql("CONSTRUCT WHERE { ?s ?p ?o }")


def test_create_only_and_notices_from_the_body() -> None:
    seen: list[httpx.Request] = []

    def capped(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        notices = [{"code": "lint", "message": f"notice {index}"} for index in range(3)]
        return httpx.Response(
            201,
            json={"notices": notices},
            headers={
                "ETag": '"1"',
                "Registry-Notices": '[{"code":"lint","message":"notice 0"}]',
                "Registry-Notices-Total": "3",
            },
        )

    with RegistryClient("http://directory", transport=httpx.MockTransport(capped)) as client:
        result = client.register({"id": "urn:a", "title": "A"}, create_only=True)
    assert seen[0].headers["if-none-match"] == "*"
    assert [notice.message for notice in result.notices] == ["notice 0", "notice 1", "notice 2"]


def _message(seq: int) -> httpx_sse.ServerSentEvent:
    return httpx_sse.ServerSentEvent(event="thing_updated", data='{"id":"urn:a"}', id=str(seq))


def test_a_subscription_resumes_after_the_last_event_and_never_delivers_one_twice() -> None:
    subscription = subscribe(capability="x")
    start = subscription.start()
    assert start is not None
    assert (start.path, start.params) == ("/api/v1/changes", {"limit": 1})
    subscription.began(40)
    # The first connection is live from the moment the directory subscribes it: no Last-Event-ID.
    assert "Last-Event-ID" not in subscription.request()[2]
    # Broken before any event: resume after the newest change when the subscription began.
    assert subscription.request()[2]["Last-Event-ID"] == "40"
    delivered = [subscription.receive(_message(seq)) for seq in (41, 42, 42, 41, 43)]
    assert [event.seq if event else None for event in delivered] == [41, 42, None, None, 43]
    assert subscription.request()[2]["Last-Event-ID"] == "43"


def test_a_subscription_from_a_known_event_id_replays_after_it() -> None:
    subscription = subscribe(last_event_id=7)
    assert subscription.start() is None
    assert subscription.request()[2]["Last-Event-ID"] == "7"
    assert subscription.receive(_message(7)) is None


def test_reconnections_retry_only_what_may_pass_later() -> None:
    subscription = subscribe()
    gone = DirectoryUnreachable("down")
    busy, restarting, refused = (ProblemError(status, "", "", {}) for status in (429, 503, 400))
    assert [subscription.may_retry(error) for error in (gone, busy, restarting, refused)] == [True, True, True, False]
    assert not subscribe(reconnect=False).may_retry(gone)


def _message_with_id(event_id: str) -> httpx_sse.ServerSentEvent:
    return httpx_sse.ServerSentEvent(event="thing_updated", data='{"id":"urn:a"}', id=event_id)


def test_a_subscription_delivers_a_late_change_whose_sequence_is_below_the_last_one_and_resumes_after_it() -> None:
    subscription = subscribe()
    subscription.began(5)
    subscription.request()
    delivered = [subscription.receive(_message_with_id(event_id)) for event_id in ("6/6/4-5", "7/7/4-5", "5/7/4")]
    assert [(event.seq, event.id) if event else None for event in delivered] == [
        (6, "6/6/4-5"),
        (7, "7/7/4-5"),
        (5, "5/7/4"),
    ]
    assert subscription.request()[2]["Last-Event-ID"] == "5/7/4"
    # Sent again (a replica resumed from an older id): covered by the position, or delivered already.
    assert subscription.receive(_message_with_id("6")) is None
    assert subscription.receive(_message_with_id("5/7/4")) is None
    assert subscription.receive(_message_with_id("4/7/")) is not None


def test_a_stream_broken_before_its_first_event_resumes_from_the_position_the_directory_named() -> None:
    subscription = subscribe()
    subscription.began(5)  # the newest change, read before subscribing
    assert "Last-Event-ID" not in subscription.request()[2]
    subscription.subscribed("7/7/4")  # Registry-Stream-Position: 4 was still pending when it subscribed
    assert subscription.request()[2]["Last-Event-ID"] == "7/7/4"
    subscription.subscribed("9")  # a resumed stream's start says nothing of what its replay delivered
    assert subscription.request()[2]["Last-Event-ID"] == "7/7/4"
