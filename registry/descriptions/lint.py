"""Tool design lint after the LMKit ``ITool`` guidelines: warnings for the registrant, never a rejection.

Applies to every action of an agent or tool, since each can be handed to a model as a tool (export formats).
Each warning names the offending member by JSON Pointer.
"""

from __future__ import annotations

import re
from typing import Any

from registry.descriptions.compatibility import pointer
from registry.descriptions.summary import KIND_THING, Summary
from registry.wire import LintWarning

SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
MAX_DESCRIPTION = 200


#: Keywords that say what a schema admits: one of them spares the schema an explicit ``type``.
_TYPING_KEYWORDS = ("type", "oneOf", "anyOf", "allOf", "enum", "const")


def _schema_warnings(schema: Any, path: list[str], action: str) -> list[LintWarning]:
    warnings: list[LintWarning] = []
    if not isinstance(schema, dict):
        return warnings
    if not any(key in schema for key in _TYPING_KEYWORDS):
        warnings.append(
            LintWarning("schema-type-missing", f"{action}: give this schema an explicit type", pointer(path))
        )
    properties = schema.get("properties")
    if isinstance(properties, dict) and properties:
        warnings.extend(_object_warnings(schema, properties, path, action))
    items = schema.get("items")
    if isinstance(items, dict):
        warnings.extend(_schema_warnings(items, [*path, "items"], action))
    return warnings


def _object_warnings(
    schema: dict[str, Any], properties: dict[str, Any], path: list[str], action: str
) -> list[LintWarning]:
    """An object schema lists its required properties, and describes each property for the model."""
    warnings: list[LintWarning] = []
    if not isinstance(schema.get("required"), list):
        warnings.append(
            LintWarning(
                "schema-required-missing",
                f"{action}: list the required properties (an empty list if none are)",
                pointer(path),
            )
        )
    for name, child in properties.items():
        child_path = [*path, "properties", name]
        if isinstance(child, dict) and not _described(child):
            warnings.append(
                LintWarning(
                    "schema-description-missing",
                    f"{action}: describe the property {name!r} for the model",
                    pointer(child_path),
                )
            )
        warnings.extend(_schema_warnings(child, child_path, action))
    return warnings


def _described(schema: dict[str, Any]) -> bool:
    description = schema.get("description")
    return isinstance(description, str) and bool(description)


def lint(document: dict[str, Any], summary: Summary) -> list[LintWarning]:
    if summary.kind == KIND_THING:
        return []
    actions = document.get("actions")
    warnings: list[LintWarning] = []
    for name, action in (actions if isinstance(actions, dict) else {}).items():
        if not isinstance(action, dict):
            continue
        path = ["actions", name]
        if not SNAKE_CASE.match(name):
            warnings.append(
                LintWarning("name-not-snake-case", f"tool name {name!r} should be stable snake_case", pointer(path))
            )
        description = action.get("description")
        if not isinstance(description, str) or not description.strip():
            warnings.append(
                LintWarning("description-missing", f"{name}: say in one sentence what the tool does", pointer(path))
            )
        elif len(description) >= MAX_DESCRIPTION:
            warnings.append(
                LintWarning(
                    "description-too-long",
                    f"{name}: the description has {len(description)} characters; keep it under {MAX_DESCRIPTION}",
                    pointer([*path, "description"]),
                )
            )
        if "input" not in action:
            warnings.append(
                LintWarning("input-schema-missing", f"{name}: declare the input as a JSON schema", pointer(path))
            )
        else:
            warnings.extend(_schema_warnings(action["input"], [*path, "input"], name))
    return warnings
