"""What every part of the diff shares: the collector of changes, RFC 6901 pointers and how values are shown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from registry.descriptions.compatibility.rules import BREAKING, COMPATIBLE, PATCH, RULES, Path, Role
from registry.wire import Change

_BUMP_OF = {BREAKING: "major", COMPATIBLE: "minor", PATCH: "patch"}


def pointer(path: Sequence[str | int]) -> str:
    """RFC 6901: ``~`` as ``~0``, ``/`` as ``~1``; array members by index."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


#: A member a document does not have, told apart from one whose value is null.
ABSENT: Any = object()


def show(value: Any) -> str:
    """A value as JSON in a change's message; ``absent`` for :data:`ABSENT`."""
    if value is ABSENT:
        return "absent"
    return msgspec.json.encode(value).decode()


class Diff:
    """Collects the changes between two documents; ``role`` is the schema role of the part being compared."""

    def __init__(self) -> None:
        self.changes: list[Change] = []

    def emit(self, kind: str, path: Path, document: str, detail: str, role: Role = "none") -> None:
        rule = RULES[kind]
        verdict = rule.verdict(role)
        message = f"{detail}: {rule.explain(role)}"
        if verdict == BREAKING:
            message += " (breaking: needs a new major version)"
        self.changes.append(Change(pointer(path), kind, verdict == BREAKING, message, _BUMP_OF[verdict], document))

    def place(self, path: Path, key: str, old: dict[str, Any], new: dict[str, Any]) -> tuple[Path, str]:
        """The pointer to ``key`` of the compared objects: in the new document if it has it, else in the old one,
        else the objects themselves (a default value changed)."""
        if key in new:
            return [*path, key], "new"
        if key in old:
            return [*path, key], "old"
        return path, "new"


def mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}
