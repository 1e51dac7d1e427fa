"""Compatibility rules, one table-driven case per rule in both directions, and properties that hold for any pair.

Each case is a pair of valid Thing Descriptions that differ by exactly one change. Forward (old → new) the rule's
kind is reported once, with its verdict and bump for the schema's role and a pointer that resolves in the document
it names; backward (new → old) one of the rule's inverse kinds is reported.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.descriptions.compatibility import (
    BREAKING,
    COMPATIBLE,
    IDENTICAL,
    PATCH,
    RULES,
    compare_documents,
    diff_documents,
    pointer,
)
from registry.descriptions.validation import validate
from registry.wire import Change

BASE: dict[str, Any] = {
    "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
    "@type": "lmos:Agent",
    "id": "urn:test:compatibility",
    "title": "Billing agent",
    "version": {"instance": "1.0.0"},
    "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}, "basic_sc": {"scheme": "basic", "in": "header"}},
    "security": "nosec_sc",
    "lmos:capabilities": [{"id": "urn:cap:billing:view", "name": "billing", "version": "1.2.0"}],
    "links": [{"rel": "service-doc", "href": "https://example.com/doc"}],
    "properties": {
        "status": {"type": "string", "forms": [{"href": "https://example.com/status"}]},
    },
    "events": {
        "overdue": {
            "data": {"type": "string"},
            "forms": [{"href": "https://example.com/overdue", "subprotocol": "longpoll"}],
        },
    },
    "actions": {
        "lookup": {
            "description": "Look up an invoice",
            "input": {"type": "object", "properties": {"invoice": {"type": "string"}}, "required": ["invoice"]},
            "output": {"type": "string"},
            "forms": [{"href": "https://example.com/lookup", "htv:methodName": "POST"}],
        }
    },
}

Mutation = Callable[[dict[str, Any]], None]


def _noop(document: dict[str, Any]) -> None:
    return None


def documents(old: Mutation, new: Mutation) -> tuple[dict[str, Any], dict[str, Any]]:
    before, after = copy.deepcopy(BASE), copy.deepcopy(BASE)
    old(before)
    new(after)
    return before, after


def resolve(document: Any, where: str) -> Any:
    """RFC 6901 evaluation; raises if the pointer does not resolve."""
    if where == "":
        return document
    for token in where[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        document = document[int(token)] if isinstance(document, list) else document[token]
    return document


def action(document: dict[str, Any]) -> dict[str, Any]:
    return document["actions"]["lookup"]  # type: ignore[no-any-return]


def prop(document: dict[str, Any]) -> dict[str, Any]:
    return document["properties"]["status"]  # type: ignore[no-any-return]


def set_in(getter: Callable[[dict[str, Any]], dict[str, Any]], **values: Any) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        target = getter(document)
        for key, value in values.items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value

    return mutate


def drop(*path: str) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        target = document
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


def chain(*mutations: Mutation) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(document)

    return mutate


def second_form(document: dict[str, Any]) -> None:
    action(document)["forms"].append({"href": "https://example.com/lookup/status", "op": "queryaction"})


def capability_version(version: str | None) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        entry = document["lmos:capabilities"][0]
        if version is None:
            entry.pop("version")
        else:
            entry["version"] = version

    return mutate


#: (kind, old mutation, new mutation, pointer, document the pointer is into)
CASES: list[tuple[str, Mutation, Mutation, str, str]] = [
    ("action_removed", _noop, drop("actions", "lookup"), "/actions/lookup", "old"),
    ("property_removed", _noop, drop("properties", "status"), "/properties/status", "old"),
    ("event_removed", _noop, drop("events", "overdue"), "/events/overdue", "old"),
    ("became_read_only", _noop, set_in(prop, readOnly=True), "/properties/status/readOnly", "new"),
    ("became_write_only", _noop, set_in(prop, writeOnly=True), "/properties/status/writeOnly", "new"),
    ("no_longer_observable", set_in(prop, observable=True), _noop, "/properties/status/observable", "old"),
    ("no_longer_safe", set_in(action, safe=True), set_in(action, safe=False), "/actions/lookup/safe", "new"),
    ("no_longer_idempotent", set_in(action, idempotent=True), _noop, "/actions/lookup/idempotent", "old"),
    ("form_removed", second_form, _noop, "/actions/lookup/forms/1", "old"),
    (
        "form_href_changed",
        _noop,
        lambda d: action(d)["forms"][0].update(href="https://example.org/lookup"),
        "/actions/lookup/forms/0/href",
        "new",
    ),
    (
        "form_op_removed",
        lambda d: action(d)["forms"][0].update(op=["invokeaction", "queryaction"]),
        lambda d: action(d)["forms"][0].update(op=["invokeaction"]),
        "/actions/lookup/forms/0/op",
        "new",
    ),
    (
        "form_content_type_changed",
        _noop,
        lambda d: action(d)["forms"][0].update(contentType="application/cbor"),
        "/actions/lookup/forms/0/contentType",
        "new",
    ),
    (
        "form_subprotocol_changed",
        _noop,
        lambda d: d["events"]["overdue"]["forms"][0].update(subprotocol="sse"),
        "/events/overdue/forms/0/subprotocol",
        "new",
    ),
    (
        "form_method_changed",
        _noop,
        lambda d: action(d)["forms"][0].update({"htv:methodName": "PUT"}),
        "/actions/lookup/forms/0/htv:methodName",
        "new",
    ),
    ("security_added", _noop, lambda d: d.update(security="basic_sc"), "/security", "new"),
    (
        "security_changed",
        lambda d: d.update(security="basic_sc"),
        lambda d: d["securityDefinitions"]["basic_sc"].update({"in": "query"}) or d.update(security="basic_sc"),
        "/security",
        "new",
    ),
    (
        "security_added",
        _noop,
        lambda d: action(d)["forms"][0].update(security="basic_sc"),
        "/actions/lookup/forms/0/security",
        "new",
    ),
    (
        "security_definition_added",
        _noop,
        lambda d: d["securityDefinitions"].update(bearer_sc={"scheme": "bearer"}),
        "/securityDefinitions/bearer_sc",
        "new",
    ),
    ("base_changed", _noop, lambda d: d.update(base="https://example.org/"), "/base", "new"),
    ("link_removed", _noop, lambda d: d.update(links=[]), "/links/0", "old"),
    (
        "link_href_changed",
        _noop,
        lambda d: d["links"][0].update(href="https://example.com/manual"),
        "/links/0/href",
        "new",
    ),
    ("capability_removed", _noop, lambda d: d.update({"lmos:capabilities": []}), "/lmos:capabilities/0", "old"),
    ("capability_major_bump", _noop, capability_version("2.0.0"), "/lmos:capabilities/0/version", "new"),
    ("capability_minor_bump", _noop, capability_version("1.3.0"), "/lmos:capabilities/0/version", "new"),
    ("capability_patch_bump", _noop, capability_version("1.2.1"), "/lmos:capabilities/0/version", "new"),
    ("capability_downgrade", _noop, capability_version("1.1.0"), "/lmos:capabilities/0/version", "new"),
    ("capability_version_changed", _noop, capability_version(None), "/lmos:capabilities/0", "new"),
    ("description_changed", _noop, set_in(action, description="Find an invoice"), "/actions/lookup/description", "new"),
]

#: Schema rules: (kind, old schema, new schema, pointer below the schema, document, role-independent?).
SCHEMA_CASES: list[tuple[str, Any, Any, str, str]] = [
    ("schema_added", None, {"type": "string"}, "", "new"),
    ("type_narrowed", {"type": "number"}, {"type": "integer"}, "/type", "new"),
    ("type_changed", {"type": "string"}, {"type": "integer"}, "/type", "new"),
    ("enum_narrowed", {"type": "string", "enum": ["a", "b"]}, {"type": "string", "enum": ["a"]}, "/enum", "new"),
    ("enum_narrowed", {"type": "string"}, {"type": "string", "const": "a"}, "/const", "new"),
    ("enum_changed", {"type": "string", "enum": ["a", "b"]}, {"type": "string", "enum": ["a", "c"]}, "/enum", "new"),
    ("constraint_tightened", {"type": "integer"}, {"type": "integer", "maximum": 5}, "/maximum", "new"),
    (
        "constraint_tightened",
        {"type": "string", "minLength": 1},
        {"type": "string", "minLength": 3},
        "/minLength",
        "new",
    ),
    ("constraint_tightened", {"type": "string"}, {"type": "string", "pattern": "^a"}, "/pattern", "new"),
    ("constraint_tightened", {"type": "string"}, {"type": "string", "format": "email"}, "/format", "new"),
    (
        "constraint_tightened",
        {"type": "object"},
        {"type": "object", "additionalProperties": False},
        "/additionalProperties",
        "new",
    ),
    ("constraint_changed", {"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}, "/pattern", "new"),
    (
        "required_property_added",
        {"type": "object", "properties": {}},
        {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
        "/properties/x",
        "new",
    ),
    (
        "optional_property_added",
        {"type": "object", "properties": {}},
        {"type": "object", "properties": {"x": {"type": "string"}}},
        "/properties/x",
        "new",
    ),
    (
        "became_required",
        {"type": "object", "properties": {"x": {"type": "string"}}},
        {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
        "/properties/x",
        "new",
    ),
    (
        "type_changed",
        {"type": "array", "items": {"type": "object", "properties": {"a/b": {"type": "string"}}}},
        {"type": "array", "items": {"type": "object", "properties": {"a/b": {"type": "number"}}}},
        "/items/properties/a~1b/type",
        "new",
    ),
    (
        "alternatives_narrowed",
        {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        {"oneOf": [{"type": "string"}]},
        "/oneOf",
        "new",
    ),
    ("alternatives_changed", {"anyOf": [{"type": "string"}]}, {"anyOf": [{"type": "integer"}]}, "/anyOf", "new"),
    ("alternatives_changed", {"allOf": [{"type": "string"}]}, {"allOf": [{"minLength": 1}]}, "/allOf", "new"),
]

_EXPECTED_BUMP = {BREAKING: "major", COMPATIBLE: "minor", PATCH: "patch"}


def only_change(changes: list[Change], kinds: tuple[str, ...]) -> Change:
    found = [change for change in changes if change.kind in kinds]
    assert len(found) == 1, changes
    assert len(changes) == 1, f"one change expected, got {changes}"
    return found[0]


def check(change: Change, kind: str, role: str, where: str, document: str, docs: dict[str, Any]) -> None:
    verdict = RULES[kind].verdict(role)  # type: ignore[arg-type]
    assert (change.kind, change.pointer, change.document) == (kind, where, document)
    assert change.breaking is (verdict == BREAKING)
    assert change.bump == _EXPECTED_BUMP[verdict]
    resolve(docs[document], change.pointer)
    assert change.message
    assert "None" not in change.message


@pytest.mark.parametrize(("kind", "old", "new", "where", "document"), CASES, ids=[case[0] for case in CASES])
def test_rule_in_both_directions(kind: str, old: Mutation, new: Mutation, where: str, document: str) -> None:
    before, after = documents(old, new)
    assert validate(before) == []
    assert validate(after) == []
    change = only_change(diff_documents(before, after), (kind,))
    check(change, kind, "none", where, document, {"old": before, "new": after})
    backward = only_change(diff_documents(after, before), RULES[kind].inverse)
    resolve({"old": after, "new": before}[backward.document], backward.pointer)


@pytest.mark.parametrize(("kind", "old", "new", "below", "document"), SCHEMA_CASES, ids=[c[0] for c in SCHEMA_CASES])
@pytest.mark.parametrize(("role", "place"), [("input", "input"), ("output", "output"), ("value", None)])
def test_schema_rule_per_role(
    kind: str, old: Any, new: Any, below: str, document: str, role: str, place: str | None
) -> None:
    if place is None and (old is None or new is None):
        pytest.skip("a property is always a schema")

    def install(schema: Any) -> Mutation:
        def mutate(doc: dict[str, Any]) -> None:
            if place is None:
                doc["properties"]["status"] = {**schema, "forms": prop(doc)["forms"]}
            elif schema is None:
                action(doc).pop(place)
            else:
                action(doc)[place] = schema

        return mutate

    before, after = documents(install(old), install(new))
    assert validate(before) == []
    assert validate(after) == []
    base = "/properties/status" if place is None else f"/actions/lookup/{place}"
    change = only_change(diff_documents(before, after), (kind,))
    check(change, kind, role, base + below, document, {"old": before, "new": after})
    backward = only_change(diff_documents(after, before), RULES[kind].inverse)
    assert backward.breaking is (RULES[backward.kind].verdict(role) == BREAKING)  # type: ignore[arg-type]


def test_every_rule_is_tested_and_has_inverses_that_exist() -> None:
    tested = {case[0] for case in CASES} | {case[0] for case in SCHEMA_CASES}
    inverses = {inverse for rule in RULES.values() for inverse in rule.inverse}
    assert inverses <= set(RULES)
    # Rules tested only backwards are the inverses of rules tested forwards.
    backwards = {inverse for kind in tested for inverse in RULES[kind].inverse}
    assert set(RULES) <= tested | backwards


def test_a_type_change_is_reported_once_and_breaks_both_ways() -> None:
    before, after = documents(_noop, lambda d: action(d).update(output={"type": "integer"}))
    changes = diff_documents(before, after)
    assert [(c.kind, c.breaking) for c in changes] == [("type_changed", True)]
    assert "string → integer" in changes[0].message


def test_the_issue_examples_are_breaking() -> None:
    cases: list[Mutation] = [
        lambda d: d.update(security="basic_sc"),
        lambda d: action(d)["forms"][0].update(href="https://example.com/other"),
        drop("events", "overdue"),
        drop("properties", "status"),
    ]
    for mutation in cases:
        before, after = documents(set_in(action, safe=True), chain(set_in(action, safe=True), mutation))
        assert compare_documents(before, after).verdict == BREAKING
    before, after = documents(set_in(action, safe=True), set_in(action, safe=False))
    assert compare_documents(before, after).verdict == BREAKING


def test_forms_are_paired_by_operation_not_position() -> None:
    before, after = documents(second_form, lambda d: action(d)["forms"].insert(0, {**action(BASE)["forms"][0]}))
    after["actions"]["lookup"]["forms"] = list(reversed(before["actions"]["lookup"]["forms"]))
    assert diff_documents(before, after) == []


def test_security_compared_by_scheme_not_by_name() -> None:
    before, after = documents(
        _noop,
        lambda d: d.update(
            securityDefinitions={"open": {"scheme": "nosec"}, "basic_sc": {"scheme": "basic"}}, security="open"
        ),
    )
    assert [c.kind for c in diff_documents(before, after)] == []


def test_capabilities_matched_by_id_wherever_they_are() -> None:
    def moved(document: dict[str, Any]) -> None:
        capabilities = document.pop("lmos:capabilities")
        document["lmos:metadata"] = {"lmos:capabilities": [{"id": "urn:cap:other", "version": "1.0.0"}, *capabilities]}

    before, after = documents(_noop, moved)
    changes = diff_documents(before, after)
    assert [(c.kind, c.pointer) for c in changes] == [("capability_added", "/lmos:metadata/lmos:capabilities/0")]


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
        ("1.0.0", "1.0.0", False, False),
    ],
)
def test_semver_honesty(old_version: str, new_version: str, breaking: bool, honest: bool) -> None:
    change: Mutation = drop("actions", "lookup") if breaking else lambda d: d["actions"].update(extra={"forms": []})
    before, after = documents(
        set_in(lambda d: d["version"], instance=old_version),
        chain(change, set_in(lambda d: d["version"], instance=new_version)),
    )
    report = compare_documents(before, after)
    assert report.verdict == (BREAKING if breaking else COMPATIBLE)
    assert report.honest is honest


def test_pointer_escapes() -> None:
    assert pointer(["actions", "a/b", "c~d", 3]) == "/actions/a~1b/c~0d/3"


def test_documentation_table_lists_every_rule_with_its_verdicts() -> None:
    text = (Path(__file__).parents[2] / "docs" / "discovery.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([a-z_]+)` \| [^|]+ \| ([^|]+ \| [^|]+) \|", text, re.MULTILINE))
    assert set(rows) == set(RULES)
    for kind, rule in RULES.items():
        assert rows[kind].split(" | ") == [rule.input, rule.output], kind


# -- properties over generated documents

SCHEMAS = st.recursive(
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["string", "integer", "number", "boolean"]),
            "enum": st.lists(st.sampled_from(["a", "b", "c", 1, 2]), min_size=1, max_size=3, unique=True),
            "maximum": st.integers(0, 3),
            "minLength": st.integers(0, 3),
            "pattern": st.sampled_from(["^a", "^b"]),
            "description": st.sampled_from(["one", "two"]),
        },
    ),
    lambda children: (
        st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.dictionaries(st.sampled_from(["x", "y/z", "w~"]), children, max_size=2),
            },
            optional={
                "required": st.lists(st.sampled_from(["x", "y/z"]), unique=True, max_size=2),
                "additionalProperties": st.booleans(),
            },
        )
        | st.fixed_dictionaries({"type": st.just("array"), "items": children})
        | st.fixed_dictionaries({"oneOf": st.lists(children, min_size=1, max_size=2)})
    ),
    max_leaves=4,
)
FORMS = st.lists(
    st.fixed_dictionaries(
        {"href": st.sampled_from(["https://a.example/x", "https://b.example/x"])},
        optional={"op": st.sampled_from(["invokeaction", "queryaction", ["invokeaction", "queryaction"]])},
    ),
    min_size=1,
    max_size=2,
)
ACTIONS = st.fixed_dictionaries(
    {"forms": FORMS},
    optional={"input": SCHEMAS, "output": SCHEMAS, "safe": st.booleans(), "description": st.sampled_from(["d", "e"])},
)


@st.composite
def descriptions(draw: st.DrawFn) -> dict[str, Any]:
    document = copy.deepcopy(BASE)
    document["actions"] = draw(st.dictionaries(st.sampled_from(["lookup", "pay", "a/b"]), ACTIONS, max_size=2))
    document["security"] = draw(st.sampled_from(["nosec_sc", "basic_sc"]))
    document["lmos:capabilities"] = [
        {"id": key, "version": version}
        for key, version in draw(
            st.dictionaries(st.sampled_from(["urn:cap:a", "urn:cap:b/c"]), st.sampled_from(["1.0.0", "1.1.0", "2.0.0"]))
        ).items()
    ]
    if draw(st.booleans()):
        document["properties"]["status"] = {**draw(SCHEMAS), "forms": [{"href": "https://a.example/s"}]}
    return document


@settings(max_examples=150, deadline=None)
@given(descriptions())
def test_a_document_compared_with_itself_is_identical(document: dict[str, Any]) -> None:
    report = compare_documents(document, copy.deepcopy(document))
    assert (report.verdict, report.changes) == (IDENTICAL, [])


@settings(max_examples=300, deadline=None)
@given(descriptions(), descriptions())
def test_pointers_resolve_and_swapping_has_reasons(old: dict[str, Any], new: dict[str, Any]) -> None:
    forward, backward = diff_documents(old, new), diff_documents(new, old)
    for change in forward:
        resolve({"old": old, "new": new}[change.document], change.pointer)
        assert change.kind in RULES
        assert change.breaking is (change.bump == "major")
    for change in backward:
        resolve({"old": new, "new": old}[change.document], change.pointer)
    # Swapping old and new never makes the changes disappear: every forward change has a reason backwards, a
    # change at the same place (the same pointer, or inside or around it).
    assert bool(forward) == bool(backward)
    for change in forward:
        here = place(change.pointer)
        assert any(
            place(other.pointer).startswith(here) or here.startswith(place(other.pointer)) for other in backward
        ), (
            change,
            backward,
        )


def place(where: str) -> str:
    """A pointer without the index of a capability entry (matched by id wherever it is) or of a form (paired by
    operations, which need not pair the same way both ways)."""
    return re.sub(r"/forms/\d+.*", "/forms", re.sub(r"/lmos:capabilities/\d+", "/lmos:capabilities", where))
