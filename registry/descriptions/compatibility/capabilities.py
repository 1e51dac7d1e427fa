"""LMOS capabilities compared by id (else name) and version."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from registry.descriptions.compatibility.diff import Diff, show
from registry.descriptions.compatibility.rules import Path
from registry.descriptions.model import capability_lists, lmos_local_name, lmos_member
from registry.descriptions.versions import bump
from registry.semantic.rdf import lmos_normalised


@dataclasses.dataclass(frozen=True, slots=True)
class CapabilityEntry:
    """An LMOS capability entry and where it is: its path in the document and its key (id, else name)."""

    key: str
    path: Path
    entry: dict[str, Any]
    version: Any


def capability_entries(document: dict[str, Any]) -> Iterator[tuple[Path, Any]]:
    """Every member of every LMOS capability list (found by what its key expands to), with its path."""
    for path, value in capability_lists(lmos_normalised(document)):
        for index, entry in enumerate(value if isinstance(value, list) else []):
            yield [*path, index], entry


def _local(key: str) -> str | None:
    """The LMOS name of a member key, plain (``version``) or prefixed (``lmos:version``)."""
    return key if ":" not in key else lmos_local_name(key)


def _member(entry: dict[str, Any], name: str) -> Any:
    return entry[name] if name in entry else lmos_member(entry, name)[1]


def _capabilities(document: dict[str, Any]) -> dict[str, CapabilityEntry]:
    result: dict[str, CapabilityEntry] = {}
    for path, entry in capability_entries(document):
        if not isinstance(entry, dict):
            continue
        key = _member(entry, "id") or _member(entry, "name")
        if isinstance(key, str) and key not in result:
            result[key] = CapabilityEntry(key, path, entry, _member(entry, "version"))
    return result


#: The change kind of a capability's version change, by the bump it is (registry/descriptions/versions.py).
_VERSION_CHANGES = {
    "major": "capability_major_bump",
    "minor": "capability_minor_bump",
    "patch": "capability_patch_bump",
    "prerelease": "capability_patch_bump",
    "downgrade": "capability_downgrade",
}


def capability_changes(diff: Diff, old: dict[str, Any], new: dict[str, Any]) -> None:
    before, after = _capabilities(old), _capabilities(new)
    for key, entry in before.items():
        if key not in after:
            diff.emit("capability_removed", entry.path, "old", f"capability {key!r} removed")
    for key, entry in after.items():
        if key not in before:
            diff.emit("capability_added", entry.path, "new", f"capability {key!r} added")
        elif before[key].version != entry.version:
            _version_change(diff, key, before[key].version, entry)


def _version_change(diff: Diff, key: str, was: Any, entry: CapabilityEntry) -> None:
    """A kept capability whose version changed from ``was`` to ``entry.version``: the bump that change is, pointed
    at the new version member."""
    now = entry.version
    change = bump(was, now) if isinstance(was, str) and isinstance(now, str) else "unknown"
    if change == "none":
        return
    version_key = next((member for member in entry.entry if _local(member) == "version"), None)
    where = entry.path if version_key is None else [*entry.path, version_key]
    kind = _VERSION_CHANGES.get(change, "capability_version_changed")
    diff.emit(kind, where, "new", f"capability {key!r} version {show(was)} → {show(now)}")
