"""Validation (WoT Discovery §7.3.2.1.5): Minimal Validation with the TD 1.0 / 1.1 schemas, every error listed."""

from __future__ import annotations

import httpx

from tests.conformance.conftest import (
    TD11_CONTEXT,
    TD_JSON,
    assert_validation_problem,
    create,
    mock_td,
    new_id,
    thing_path,
)


def test_tdd_validation_syntactic(client: httpx.Client) -> None:
    """A TD without a title is rejected before storage, by PUT and POST alike."""
    td = mock_td(new_id())
    del td["title"]
    assert_validation_problem(client.put(thing_path(td["id"]), json=td, headers=TD_JSON))
    assert client.get(thing_path(td["id"])).status_code == 404
    anonymous = mock_td()
    del anonymous["title"]
    assert_validation_problem(client.post("/things", json=anonymous, headers=TD_JSON))


def test_tdd_validation_syntactic__not_an_object(client: httpx.Client) -> None:
    for body in (b"[]", b'"a string"', b"42", b"null"):
        assert_validation_problem(client.post("/things", content=body, headers=TD_JSON))


def test_tdd_validation_result(client: httpx.Client) -> None:
    """Every problem is reported, each with the field that has it, so the client can fix them all at once."""
    td = mock_td(new_id(), properties={"status": {"forms": [{"href": 42}]}})
    del td["title"]
    td["security"] = ["nosec_sc", "missing_sc"]
    errors = assert_validation_problem(client.put(thing_path(td["id"]), json=td, headers=TD_JSON))
    fields = {error["field"] for error in errors}
    assert "(root)" in fields  # title is required
    assert any(field.startswith("properties.status.forms.0") for field in fields)
    assert any("missing_sc" in error["description"] for error in errors)
    assert len(errors) >= 3


def test_tdd_validation_response(client: httpx.Client) -> None:
    td = mock_td(new_id(), title=7)
    errors = assert_validation_problem(client.put(thing_path(td["id"]), json=td, headers=TD_JSON))
    assert any(error["field"] == "title" for error in errors)


def test_tdd_validation_response_utf_8(client: httpx.Client) -> None:
    td = mock_td(new_id(), title=None, description="ünïcödé ✓")
    response = client.put(thing_path(td["id"]), json=td, headers=TD_JSON)
    assert_validation_problem(response)
    charset = response.headers["content-type"].partition("charset=")[2].strip().lower()
    assert charset in ("", "utf-8")
    response.content.decode("utf-8")


def test_tdd_validation_jsonschema(client: httpx.Client) -> None:
    """The schema follows @context: TD 1.0 and TD 1.1 documents are both accepted; registration is typed."""
    create(client, mock_td(new_id()))
    create(client, mock_td(new_id(), **{"@context": [TD11_CONTEXT, {"ex": "https://example.com/"}]}))
    create(client, mock_td(new_id(), **{"@context": ["https://www.w3.org/2019/wot/td/v1", TD11_CONTEXT]}))
    bad_context = mock_td(new_id(), **{"@context": "https://example.com/not-a-td-context"})
    assert_validation_problem(client.put(thing_path(bad_context["id"]), json=bad_context, headers=TD_JSON))
    bad_ttl = mock_td(new_id(), registration={"ttl": "an hour"})
    errors = assert_validation_problem(client.put(thing_path(bad_ttl["id"]), json=bad_ttl, headers=TD_JSON))
    assert any(error["field"].startswith("registration") for error in errors)


def test_tdd_validation_jsonschema__lmos_rules(client: httpx.Client) -> None:
    """LMOS agents and tools also get the LMOS rules: a SemVer version and a vendor object with a name."""
    agent = mock_td(
        new_id(),
        **{
            "@context": [TD11_CONTEXT, {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
            "@type": "lmos:Agent",
            "version": {"instance": "one"},
            "lmos:metadata": {"lmos:vendor": "ACME"},
        },
    )
    errors = assert_validation_problem(client.put(thing_path(agent["id"]), json=agent, headers=TD_JSON))
    assert {error["field"] for error in errors} >= {"version.instance", "lmos:metadata.lmos:vendor"}
