"""Rules of a registration's lifetime and of the tool lint, pinned in process: each rule's message, field and the
order the rules report in."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from registry.descriptions.lint import lint
from registry.descriptions.registration_info import Lifetime, LifetimePolicy, split_registration
from registry.descriptions.summary import summarise
from registry.descriptions.validation import FieldError

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
POLICY = LifetimePolicy(max_ttl=3600)


def _split(registration: Any, policy: LifetimePolicy = POLICY) -> tuple[Lifetime, list[FieldError]]:
    document = {"id": "urn:x:1", "title": "T", "registration": registration}
    stored, lifetime, errors = split_registration(document, policy, NOW)
    assert stored == {"id": "urn:x:1", "title": "T"}
    return lifetime, errors


def test_a_registration_asks_for_a_ttl_or_else_an_expiry() -> None:
    assert _split({"ttl": 60}) == (Lifetime(ttl=60.0), [])
    expires = "2026-01-01T00:30:00+00:00"
    assert _split({"expires": expires}) == (Lifetime(expires=dt.datetime.fromisoformat(expires)), [])
    # With a ttl the expires is ignored, even a malformed one.
    assert _split({"ttl": 60, "expires": "soon"}) == (Lifetime(ttl=60.0), [])
    assert _split(None) == (Lifetime(), [])
    assert _split({}) == (Lifetime(), [])


@pytest.mark.parametrize(
    ("registration", "field", "message"),
    [
        ("x", "registration", "registration must be an object"),
        ({"ttl": True}, "registration.ttl", "ttl must be a number of seconds"),
        ({"ttl": 0}, "registration.ttl", "ttl must be greater than zero"),
        ({"ttl": 7200}, "registration.ttl", "ttl 7200 exceeds this directory's maximum of 3600"),
        ({"expires": "2026-01-01T00:30:00"}, "registration.expires", "expires must be an RFC 3339 date-time"),
        ({"expires": "2025-12-31T00:00:00Z"}, "registration.expires", "expires lies in the past"),
        ({"expires": "2026-01-02T00:00:00Z"}, "registration.expires", "expires is more than 3600 s in the future"),
    ],
)
def test_what_is_wrong_with_a_registration_is_named(registration: Any, field: str, message: str) -> None:
    _, errors = _split(registration)
    assert [error.field for error in errors] == [field]
    assert errors[0].description.startswith(message)


def test_a_mandated_ttl_is_asked_for_only_when_nothing_else_is_wrong() -> None:
    mandate = LifetimePolicy(mandate_ttl=True)
    required = FieldError("registration.ttl", "this directory requires a ttl on every registration")
    assert _split({"expires": "2026-01-01T00:30:00Z"}, mandate)[1] == [required]
    assert _split(None, mandate)[1] == [required]
    assert _split("x", mandate)[1] == [FieldError("registration", "registration must be an object")]
    assert _split({"ttl": 60}, mandate) == (Lifetime(ttl=60.0), [])


def _warnings(actions: dict[str, Any]) -> list[tuple[str, str]]:
    document = {
        "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1#"}],
        "@type": "lmos:Tool",
        "actions": actions,
    }
    return [(warning.code, warning.field) for warning in lint(document, summarise(document))]


def test_tool_schemas_are_linted_depth_first_in_rule_order() -> None:
    schema = {
        "properties": {
            "city": {"type": "string"},
            "when": {"type": "object", "description": "", "properties": {"day": {"description": "d"}}},
            "raw": True,
        },
        "items": {"enum": [1]},
    }
    assert _warnings({"get_weather": {"description": "Gets the weather.", "input": schema}}) == [
        ("schema-type-missing", "/actions/get_weather/input"),
        ("schema-required-missing", "/actions/get_weather/input"),
        ("schema-description-missing", "/actions/get_weather/input/properties/city"),
        ("schema-description-missing", "/actions/get_weather/input/properties/when"),
        ("schema-required-missing", "/actions/get_weather/input/properties/when"),
        ("schema-type-missing", "/actions/get_weather/input/properties/when/properties/day"),
    ]


def test_a_schema_that_says_what_it_admits_needs_no_type() -> None:
    for keyword, value in (("oneOf", []), ("anyOf", []), ("allOf", []), ("enum", [1]), ("const", 1)):
        action = {"description": "Does it.", "input": {keyword: value}}
        assert _warnings({"do_it": action}) == []
    described = {"type": "object", "required": [], "properties": {"a": {"type": "string", "description": "A."}}}
    assert _warnings({"do_it": {"description": "Does it.", "input": described}}) == []
