"""Schema diffs with JSON Pointers, breaking/non-breaking classification, and semver honesty."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from registry.descriptions.compatibility import BREAKING, COMPATIBLE, IDENTICAL, compare_documents, pointer


def agent(version: str, actions: dict[str, Any], capabilities: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"@type": "lmos:Agent", "version": {"instance": version}, "actions": actions}
    if capabilities is not None:
        document["lmos:capabilities"] = capabilities
    return document


BASE_ACTION: dict[str, Any] = {
    "description": "Look up an invoice",
    "input": {
        "type": "object",
        "properties": {
            "invoice_id": {"type": "string"},
            "format": {"type": "string", "enum": ["pdf", "html"]},
            "amount": {"type": "number", "maximum": 100},
        },
        "required": ["invoice_id"],
    },
    "output": {
        "type": "object",
        "properties": {"total": {"type": "number"}, "currency": {"type": "string"}},
        "required": ["total", "currency"],
    },
}


def changed(mutate: Any) -> list[tuple[str, str, bool]]:
    action = copy.deepcopy(BASE_ACTION)
    mutate(action)
    report = compare_documents(agent("1.0.0", {"lookup": BASE_ACTION}), agent("1.0.1", {"lookup": action}))
    return [(change.pointer, change.kind, change.breaking) for change in report.changes]


def test_identical_documents() -> None:
    report = compare_documents(agent("1.0.0", {"lookup": BASE_ACTION}), agent("1.0.0", {"lookup": BASE_ACTION}))
    assert (report.verdict, report.changes, report.required_bump, report.honest) == (IDENTICAL, [], "none", True)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda a: a["input"]["properties"].update(note={"type": "string"}),
            [("/actions/lookup/input/properties/note", "input_optional_added", False)],
        ),
        (
            lambda a: (
                a["input"]["properties"].update(customer={"type": "string"}),
                a["input"]["required"].append("customer"),
            ),
            [("/actions/lookup/input/properties/customer", "input_required_added", True)],
        ),
        (
            lambda a: a["input"]["required"].append("format"),
            [("/actions/lookup/input/properties/format", "input_became_required", True)],
        ),
        (
            lambda a: a["input"]["properties"]["format"].update(enum=["pdf"]),
            [("/actions/lookup/input/properties/format/enum", "enum_narrowed", True)],
        ),
        (
            lambda a: a["input"]["properties"]["format"].update(enum=["pdf", "html", "csv"]),
            [("/actions/lookup/input/properties/format/enum", "enum_widened", False)],
        ),
        (
            lambda a: a["input"]["properties"]["amount"].update(type="integer"),
            [("/actions/lookup/input/properties/amount", "type_narrowed", True)],
        ),
        (
            lambda a: a["input"]["properties"]["invoice_id"].update(type=["string", "integer"]),
            [("/actions/lookup/input/properties/invoice_id", "type_widened", False)],
        ),
        (
            lambda a: a["input"]["properties"]["amount"].update(maximum=50),
            [("/actions/lookup/input/properties/amount/maximum", "constraint_tightened", True)],
        ),
        (
            lambda a: a["output"]["properties"].pop("currency"),
            [("/actions/lookup/output/properties/currency", "output_property_removed", True)],
        ),
        (
            lambda a: a["output"]["properties"].update(due={"type": "string"}),
            [("/actions/lookup/output/properties/due", "output_property_added", False)],
        ),
        (
            lambda a: a["output"]["properties"]["total"].update(type=["number", "null"]),
            [("/actions/lookup/output/properties/total", "type_widened", True)],
        ),
        (
            lambda a: a["output"]["required"].remove("currency"),
            [("/actions/lookup/output/properties/currency", "output_became_optional", True)],
        ),
        (
            lambda a: a.update(description="Find an invoice"),
            [("/actions/lookup/description", "description_changed", False)],
        ),
    ],
)
def test_schema_changes(mutate: Any, expected: list[tuple[str, str, bool]]) -> None:
    assert changed(mutate) == expected


def test_removed_and_added_actions() -> None:
    report = compare_documents(
        agent("1.0.0", {"lookup": BASE_ACTION, "old": {}}), agent("2.0.0", {"lookup": BASE_ACTION, "new~/x": {}})
    )
    assert [(change.pointer, change.kind, change.breaking) for change in report.changes] == [
        ("/actions/old", "action_removed", True),
        ("/actions/new~0~1x", "action_added", False),
    ]
    assert report.verdict == BREAKING
    assert (report.required_bump, report.declared_bump, report.honest) == ("major", "major", True)


def test_capabilities_removed_or_major_changed_are_breaking() -> None:
    old = agent("1.0.0", {}, [{"id": "urn:cap:a", "version": "1.0.0"}, {"id": "urn:cap:b", "version": "1.0.0"}])
    new = agent("1.1.0", {}, [{"id": "urn:cap:a", "version": "2.0.0"}, {"id": "urn:cap:c", "version": "1.0.0"}])
    report = compare_documents(old, new)
    assert [(change.pointer, change.kind, change.breaking) for change in report.changes] == [
        ("/lmos:capabilities/urn:cap:a", "capability_version_changed", True),
        ("/lmos:capabilities/urn:cap:b", "capability_removed", True),
        ("/lmos:capabilities/urn:cap:c", "capability_added", False),
    ]
    assert report.honest is False


@pytest.mark.parametrize(
    ("old_version", "new_version", "breaking", "honest"),
    [
        ("1.0.0", "1.1.0", True, False),
        ("1.0.0", "2.0.0", True, True),
        ("1.0.0", "1.0.1", False, False),
        ("1.0.0", "1.1.0", False, True),
        ("0.3.0", "0.4.0", True, True),
        ("0.3.0", "0.3.1", True, False),
        ("1.0.0", "0.9.0", False, False),
    ],
)
def test_semver_honesty(old_version: str, new_version: str, breaking: bool, honest: bool) -> None:
    action = copy.deepcopy(BASE_ACTION)
    if breaking:
        action["output"]["properties"].pop("currency")
    else:
        action["input"]["properties"]["note"] = {"type": "string"}
    report = compare_documents(agent(old_version, {"lookup": BASE_ACTION}), agent(new_version, {"lookup": action}))
    assert report.verdict == (BREAKING if breaking else COMPATIBLE)
    assert report.honest is honest


def test_pointer_escapes() -> None:
    assert pointer(["actions", "a/b", "c~d"]) == "/actions/a~1b/c~0d"
