"""Errors and HTTP rules (WoT Discovery §7.3.2): problem+json for every 4xx, HEAD everywhere."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.conformance.conftest import TD_JSON, assert_problem, create, mock_td, new_id, thing_path
from tests.support.servers import ServerProcess


def test_tdd_http_error_response(client: httpx.Client) -> None:
    problem = assert_problem(client.get(thing_path(new_id())), 404)
    assert problem["type"] == "about:blank"


def test_tdd_http_error_response__malformed_json(client: httpx.Client) -> None:
    for body in (b"{", b'{"title": }', b"\xff\xfe", b"", b"   ", b'{"a":1} trailing'):
        problem = assert_problem(client.post("/things", content=body, headers=TD_JSON), 400)
        assert problem["detail"]


def test_tdd_http_error_response__deeply_nested_json(client: httpx.Client) -> None:
    body = b'{"title":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert_problem(client.post("/things", content=body, headers=TD_JSON), 400)
    nested = b'{"title":"x","a":' + b'{"a":' * 200 + b"1" + b"}" * 200 + b"}"
    assert_problem(client.post("/things", content=nested, headers=TD_JSON), 400)


def test_tdd_http_error_response__nul_characters(client: httpx.Client) -> None:
    """PostgreSQL cannot store U+0000 in text or jsonb: refused up front as a 400, not a 500."""
    assert_problem(client.post("/things", json=mock_td(title="a\u0000b"), headers=TD_JSON), 400)
    assert_problem(client.post("/things", json=mock_td(**{"x\u0000": 1}), headers=TD_JSON), 400)
    thing_id = new_id()
    assert_problem(client.put(thing_path(thing_id), json=mock_td(thing_id, title="\u0000"), headers=TD_JSON), 400)
    created = client.post("/things", json=mock_td(title="a\\u0000b"), headers=TD_JSON)
    assert created.status_code == 201, created.text
    assert client.get(thing_path(created.headers["location"])).json()["title"] == "a\\u0000b"


def test_tdd_http_error_response__wrong_content_type_415(client: httpx.Client) -> None:
    td = mock_td(new_id())
    for headers in ({"content-type": "text/plain"}, {"content-type": "application/xml"}, {}):
        response = client.put(thing_path(td["id"]), content=httpx.Request("PUT", "/", json=td).content, headers=headers)
        assert_problem(response, 415)
    assert_problem(
        client.post("/things", json=mock_td(), headers={"content-type": "application/merge-patch+json"}), 415
    )


def test_tdd_http_error_response__unknown_path_404(client: httpx.Client) -> None:
    for path in ("/nope", "/things-and-more", "/.well-known/nothing", "/searching?query=x"):
        assert_problem(client.get(path), 404)


def test_tdd_http_error_response__wrong_method_405(client: httpx.Client) -> None:
    for method, path in (("DELETE", "/things"), ("PATCH", "/things"), ("PUT", "/things"), ("POST", "/.well-known/wot")):
        problem = assert_problem(client.request(method, path, json={}), 405)
        assert method in problem["detail"]
    assert_problem(client.post(thing_path(new_id()), json=mock_td(), headers=TD_JSON), 405)


def test_tdd_http_error_response__body_too_large_413(
    isolated_server: Callable[[dict[str, str]], ServerProcess],
) -> None:
    server = isolated_server({"REGISTRY_MAX_BODY_BYTES": "2000"})
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        small = mock_td(new_id())
        assert client.put(thing_path(small["id"]), json=small, headers=TD_JSON).status_code == 201
        big = mock_td(new_id(), description="x" * 5000)
        assert_problem(client.put(thing_path(big["id"]), json=big, headers=TD_JSON), 413)
        assert_problem(client.post("/things", json=mock_td(description="x" * 5000), headers=TD_JSON), 413)

        def chunks() -> object:
            yield b'{"title":"'
            for _ in range(10):
                yield b"x" * 1000
            yield b'"}'

        streamed = client.post("/things", content=chunks(), headers=TD_JSON)  # type: ignore[arg-type]
        assert_problem(streamed, 413)
        assert client.get(thing_path(big["id"])).status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/things/%",
        "/things/%ff%fe",
        "/things/",
        "/things/%00",
        "/things?limit=99999999999999999999999",
        "/things?offset=99999999999999999999999",
        "/things/x%2",
    ],
)
def test_tdd_http_error_response__odd_requests_are_4xx(client: httpx.Client, path: str) -> None:
    """No client input gives a 500: malformed escapes, NUL bytes, absurd numbers."""
    for method in ("GET", "PUT", "PATCH", "DELETE"):
        response = client.request(method, path, json=mock_td(), headers={"content-type": "application/td+json"})
        assert response.status_code < 500, (method, path, response.status_code, response.text)
        if response.status_code >= 400:
            assert_problem(response, response.status_code)


def test_tdd_http_error_response_utf_8(client: httpx.Client) -> None:
    thing_id = "urn:x:ünïcödé-✓"
    response = client.get(thing_path(thing_id))
    problem = assert_problem(response, 404)
    assert thing_id in problem["detail"]
    assert "charset=utf-8" in response.headers["content-type"].lower().replace(" ", "")


def test_tdd_http_head(client: httpx.Client) -> None:
    """HEAD answers with the headers of GET and no body, on every GET endpoint."""
    td = mock_td(new_id())
    create(client, td)
    for path in ("/things", "/things?limit=1", "/things?format=collection", thing_path(td["id"]), "/.well-known/wot"):
        get = client.get(path)
        head = client.head(path)
        assert head.status_code == get.status_code == 200, path
        assert head.content == b""
        assert head.headers["content-type"] == get.headers["content-type"]
        for name in ("etag", "link"):
            assert head.headers.get(name) == get.headers.get(name), (path, name)
    assert client.head(thing_path(new_id())).status_code == 404


def test_tdd_http_unsupported_feature(client: httpx.Client) -> None:
    """Missing endpoints are 404, unsupported methods 405, unsupported query arguments 400, and the informative
    XPath search this directory does not offer answers 501 with a pointer to the alternatives."""
    assert_problem(client.get("/search/nothing"), 404)
    assert_problem(client.get("/search/xpath?query=x"), 501)
    assert_problem(client.patch("/things", json={}), 405)
    assert_problem(client.get("/things?sort_by=title"), 400)
