"""LMOS capability lists are validated like the rest of a description: nothing malformed is dropped silently."""

from __future__ import annotations

from typing import Any

import pytest

from registry.descriptions.summary import summarise
from registry.descriptions.validation import validate


def agent(**members: Any) -> dict[str, Any]:
    return {
        "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
        "@type": "lmos:Agent",
        "title": "Agent",
        "version": {"instance": "1.0.0"},
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
        **members,
    }


@pytest.mark.parametrize(
    ("members", "field", "words"),
    [
        ({"lmos:capabilities": {"id": "urn:cap:a"}}, "lmos:capabilities", "must be a list"),
        ({"lmos:capabilities": ["urn:cap:a"]}, "lmos:capabilities.0", "not str"),
        ({"lmos:capabilities": [None]}, "lmos:capabilities.0", "not null"),
        ({"lmos:capabilities": [{"description": "x"}]}, "lmos:capabilities.0", "needs an id or a name"),
        ({"lmos:capabilities": [{"id": 5}]}, "lmos:capabilities.0.id", "non-empty string"),
        ({"lmos:capabilities": [{"id": "urn:cap:a", "version": 2}]}, "lmos:capabilities.0.version", "must be a string"),
        (
            {"lmos:capabilities": [{"id": "urn:cap:a", "version": "two"}]},
            "lmos:capabilities.0.version",
            "not a semantic version",
        ),
        ({"lmos:capabilities": [{"name": "a", "examples": [1]}]}, "lmos:capabilities.0.examples", "strings"),
        (
            {"lmos:metadata": {"lmos:providedCapabilities": [{"name": "a", "lmos:version": "1.x"}]}},
            "lmos:metadata.lmos:providedCapabilities.0.lmos:version",
            "not a semantic version",
        ),
    ],
)
def test_malformed_capabilities_are_validation_errors(members: dict[str, Any], field: str, words: str) -> None:
    errors = validate(agent(**members))
    assert [error.field for error in errors] == [field]
    assert words in errors[0].description


@pytest.mark.parametrize("version", ["1.2.3", "1.0", "v2", "1.0.0-beta.1"])
def test_well_formed_capabilities_are_accepted_as_registered(version: str) -> None:
    document = agent(**{"lmos:capabilities": [{"id": "urn:cap:a", "name": "a", "version": version, "examples": "x"}]})
    assert validate(document) == []
    assert [(item.id, item.version) for item in summarise(document).capabilities] == [("urn:cap:a", version)]


def test_a_capability_member_with_an_empty_key_is_not_read_as_its_version() -> None:
    document = agent(**{"lmos:capabilities": [{"": "not a version", "id": "urn:cap:a"}]})
    assert validate(document) == []
