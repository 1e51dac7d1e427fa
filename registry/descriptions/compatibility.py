"""Are two versions of an agent or tool compatible? A diff of actions, capabilities and their JSON Schemas.

Inputs are what callers send, outputs what callers receive, so the rules mirror each other: narrowing an input
(new required property, fewer types or enum values, tighter bounds) breaks callers, as does widening an output
(more types or enum values) or removing a guaranteed output field. Every change names its place by JSON Pointer
(RFC 6901) into the new document (into the old one for removals).

The bump a change set requires: major for any breaking change, minor for additions, patch otherwise. Below 1.0.0
semver promises nothing, so there a minor bump is accepted for breaking changes (as npm's ``^0.x`` does).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from registry.descriptions.summary import SOURCE_LMOS, summarise
from registry.descriptions.versions import bump, sort_key
from registry.wire import Change, Report

BREAKING = "breaking"
COMPATIBLE = "compatible"
IDENTICAL = "identical"

_BUMP_ORDER = {"none": 0, "prerelease": 0, "patch": 1, "minor": 2, "major": 3}

#: Numeric bounds: True when a larger value admits more instances.
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")


def pointer(path: list[str]) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in path)


def _types(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types a schema admits (None = any); ``number`` includes ``integer``."""
    declared = schema.get("type")
    if declared is None:
        return None
    types = {declared} if isinstance(declared, str) else {item for item in declared if isinstance(item, str)}
    if "number" in types:
        types.add("integer")
    return types


def _change(path: list[str], kind: str, breaking: bool, message: str, *, addition: bool = False) -> Change:
    return Change(pointer(path), kind, breaking, message, "major" if breaking else "minor" if addition else "patch")


def diff_schema(old: Any, new: Any, path: list[str], *, is_input: bool) -> Iterator[Change]:
    """Changes between two JSON Schemas of one input (``is_input``) or output, recursively."""
    side = "input" if is_input else "output"
    if not isinstance(old, dict) and not isinstance(new, dict):
        return
    if not isinstance(old, dict):
        # An input gaining a schema is constrained where it was free; an output gaining one only says more.
        yield _change(path, "schema_added", is_input, f"the {side} now has a schema", addition=not is_input)
        return
    if not isinstance(new, dict):
        yield _change(path, "schema_removed", not is_input, f"the {side} no longer has a schema")
        return
    old_types, new_types = _types(old), _types(new)
    narrowed = new_types is not None and (old_types is None or bool(old_types - new_types))
    widened = old_types is not None and (new_types is None or bool(new_types - old_types))
    if narrowed:
        message = f"{side} type narrowed from {_show(old_types)} to {_show(new_types)}"
        yield _change(path, "type_narrowed", is_input, message)
    if widened:
        message = f"{side} type widened from {_show(old_types)} to {_show(new_types)}"
        yield _change(path, "type_widened", not is_input, message, addition=True)
    yield from _diff_enum(old, new, path, is_input)
    yield from _diff_bounds(old, new, path, is_input)
    if old.get("pattern") != new.get("pattern") and new.get("pattern") is not None:
        yield _change(path, "pattern_changed", is_input, f"{side} pattern is now {new['pattern']!r}")
    yield from _diff_properties(old, new, path, is_input)
    if isinstance(old.get("items"), dict) or isinstance(new.get("items"), dict):
        yield from diff_schema(old.get("items"), new.get("items"), [*path, "items"], is_input=is_input)
    if old.get("description") != new.get("description") and new.get("description") is not None:
        yield _change([*path, "description"], "description_changed", False, f"{side} description changed")


def _show(types: set[str] | None) -> str:
    return "any" if types is None else "/".join(sorted(types - {"integer"} if "number" in types else types))


def _diff_enum(old: dict[str, Any], new: dict[str, Any], path: list[str], is_input: bool) -> Iterator[Change]:
    side = "input" if is_input else "output"
    old_enum, new_enum = old.get("enum"), new.get("enum")
    if old_enum == new_enum:
        return
    if not isinstance(new_enum, list):
        if isinstance(old_enum, list):
            yield _change(path, "enum_widened", not is_input, f"{side} values no longer limited to {old_enum}")
        return
    if not isinstance(old_enum, list):
        yield _change(path, "enum_narrowed", is_input, f"{side} values now limited to {new_enum}")
        return
    removed = [value for value in old_enum if value not in new_enum]
    added = [value for value in new_enum if value not in old_enum]
    if removed:
        yield _change([*path, "enum"], "enum_narrowed", is_input, f"{side} values removed: {removed}")
    if added:
        yield _change([*path, "enum"], "enum_widened", not is_input, f"{side} values added: {added}", addition=True)


def _diff_bounds(old: dict[str, Any], new: dict[str, Any], path: list[str], is_input: bool) -> Iterator[Change]:
    side = "input" if is_input else "output"
    for keyword in (*_LOWER_BOUNDS, *_UPPER_BOUNDS):
        before, after = old.get(keyword), new.get(keyword)
        if before == after or not all(isinstance(value, int | float | None) for value in (before, after)):
            continue
        lower = keyword in _LOWER_BOUNDS
        if before is None:
            tightened = True
        elif after is None:
            tightened = False
        else:
            tightened = after > before if lower else after < before
        kind = "constraint_tightened" if tightened else "constraint_loosened"
        yield _change(
            [*path, keyword],
            kind,
            tightened if is_input else not tightened,
            f"{side} {keyword} changed from {before} to {after}",
            addition=not tightened,
        )


def _required(schema: dict[str, Any]) -> set[str]:
    required = schema.get("required")
    return {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, dict) else {}


def _diff_properties(old: dict[str, Any], new: dict[str, Any], path: list[str], is_input: bool) -> Iterator[Change]:
    old_properties, new_properties = _properties(old), _properties(new)
    old_required, new_required = _required(old), _required(new)
    for name in old_properties:
        if name not in new_properties:
            place = [*path, "properties", name]
            if is_input:
                yield _change(place, "input_property_removed", True, f"input property {name!r} removed")
            else:
                yield _change(place, "output_property_removed", True, f"output property {name!r} removed")
    for name, schema in new_properties.items():
        place = [*path, "properties", name]
        if name not in old_properties:
            if is_input and name in new_required:
                yield _change(place, "input_required_added", True, f"new required input property {name!r}")
            elif is_input:
                yield _change(place, "input_optional_added", False, f"new optional input {name!r}", addition=True)
            else:
                yield _change(place, "output_property_added", False, f"new output property {name!r}", addition=True)
            continue
        if is_input and name in new_required and name not in old_required:
            yield _change(place, "input_became_required", True, f"input property {name!r} is now required")
        elif is_input and name in old_required and name not in new_required:
            yield _change(place, "input_became_optional", False, f"input property {name!r} is now optional")
        elif not is_input and name in old_required and name not in new_required:
            yield _change(place, "output_became_optional", True, f"output property {name!r} is no longer guaranteed")
        yield from diff_schema(old_properties[name], schema, place, is_input=is_input)


def _actions(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    actions = document.get("actions")
    if not isinstance(actions, dict):
        return {}
    return {name: action for name, action in actions.items() if isinstance(action, dict)}


def _diff_capabilities(old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    """LMOS capability entries, matched by id (else name): removal or a new major version breaks resolvers."""

    def declared(document: dict[str, Any]) -> dict[str, str | None]:
        return {
            capability.id or capability.name: capability.version
            for capability in summarise(document).capabilities
            if capability.source == SOURCE_LMOS
        }

    old_capabilities, new_capabilities = declared(old), declared(new)
    for key, version in old_capabilities.items():
        place = ["lmos:capabilities", key]
        if key not in new_capabilities:
            yield _change(place, "capability_removed", True, f"capability {key!r} removed")
            continue
        new_version = new_capabilities[key]
        if version and new_version and version != new_version:
            change = bump(version, new_version)
            breaking = change in {"major", "downgrade", "unknown"}
            yield _change(
                place,
                "capability_version_changed",
                breaking,
                f"capability {key!r} version {version} → {new_version} ({change})",
                addition=not breaking,
            )
    for key in new_capabilities:
        if key not in old_capabilities:
            yield _change(
                ["lmos:capabilities", key], "capability_added", False, f"capability {key!r} added", addition=True
            )


def diff_documents(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    changes: list[Change] = []
    old_actions, new_actions = _actions(old), _actions(new)
    for name in old_actions:
        if name not in new_actions:
            changes.append(_change(["actions", name], "action_removed", True, f"action {name!r} removed"))
    for name, action in new_actions.items():
        if name not in old_actions:
            changes.append(_change(["actions", name], "action_added", False, f"action {name!r} added", addition=True))
            continue
        before = old_actions[name]
        changes.extend(diff_schema(before.get("input"), action.get("input"), ["actions", name, "input"], is_input=True))
        changes.extend(
            diff_schema(before.get("output"), action.get("output"), ["actions", name, "output"], is_input=False)
        )
        if before.get("description") != action.get("description"):
            changes.append(
                _change(["actions", name, "description"], "description_changed", False, f"{name}: description changed")
            )
    changes.extend(_diff_capabilities(old, new))
    return changes


def required_bump(changes: list[Change]) -> str:
    return max((change.bump for change in changes), key=_BUMP_ORDER.__getitem__, default="none")


def _honest(declared: str, required: str, old_version: str) -> bool:
    if declared in {"downgrade", "unknown"}:
        return False
    old_key = sort_key(old_version)
    if required == "major" and old_key is not None and old_key.major == 0:
        required = "minor"
    if declared == "none":
        return required == "none"
    return _BUMP_ORDER[declared] >= _BUMP_ORDER[required]


def compare_documents(
    old: dict[str, Any], new: dict[str, Any], old_version: str | None = None, new_version: str | None = None
) -> Report:
    """The report for ``old`` → ``new``; versions default to each document's ``version.instance``."""
    changes = diff_documents(old, new)
    old_version = old_version or summarise(old).version
    new_version = new_version or summarise(new).version
    needed = required_bump(changes)
    verdict = BREAKING if any(change.breaking for change in changes) else COMPATIBLE if changes else IDENTICAL
    if old_version is None or new_version is None:
        return Report(verdict=verdict, changes=changes, required_bump=needed)
    declared = bump(old_version, new_version)
    return Report(
        verdict=verdict,
        changes=changes,
        required_bump=needed,
        declared_bump=declared,
        honest=_honest(declared, needed, old_version),
    )
