"""The report of two versions: every change, the verdict, the bump the changes require and whether the declared
bump is honest (below 1.0.0 a minor bump is accepted for breaking changes, as npm's ``^0.x``)."""

from __future__ import annotations

from typing import Any

from registry.descriptions.compatibility.affordances import ContractDiff, definition_changes, in_force, link_changes
from registry.descriptions.compatibility.capabilities import capability_changes
from registry.descriptions.compatibility.diff import ABSENT, show
from registry.descriptions.compatibility.rules import BREAKING, COMPATIBLE, IDENTICAL
from registry.descriptions.summary import version_of
from registry.descriptions.versions import bump, sort_key
from registry.wire import Change, Report

_BUMP_ORDER = {"none": 0, "prerelease": 0, "patch": 1, "minor": 2, "major": 3}


def diff_documents(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    diff = ContractDiff()
    if old.get("base", ABSENT) != new.get("base", ABSENT):
        where, document = diff.place([], "base", old, new)
        diff.emit(
            "base_changed",
            where,
            document,
            f"base {show(old.get('base', ABSENT))} → {show(new.get('base', ABSENT))}",
        )
    diff.security(in_force(old, old), in_force(new, new), *diff.place([], "security", old, new), "security")
    definition_changes(diff, old, new)
    diff.forms(old, new, [], "", old, new, "the description")
    diff.affordances(old, new, old, new)
    link_changes(diff, old, new)
    capability_changes(diff, old, new)
    return diff.changes


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
    old_version = old_version or version_of(old)
    new_version = new_version or version_of(new)
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
