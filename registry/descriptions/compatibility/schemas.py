"""Data schemas compared by role: narrowing what callers send breaks them, narrowing what they receive does not,
and the reverse for widening; a property's value is both."""

from __future__ import annotations

from typing import Any

from registry.descriptions.compatibility.diff import ABSENT, Diff, mapping, show
from registry.descriptions.compatibility.rules import Path, Role

#: Schema keywords whose larger value admits more instances (lower bounds) and fewer (upper bounds).
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")


class SchemaDiff(Diff):
    """The changes of the data schemas of two documents."""

    def schema(self, old: Any, new: Any, path: Path, role: Role, label: str) -> None:
        if not isinstance(old, dict) and not isinstance(new, dict):
            return
        if not isinstance(old, dict):
            self.emit("schema_added", path, "new", f"{label} now has a schema", role)
            return
        if not isinstance(new, dict):
            self.emit("schema_removed", path, "old", f"{label} no longer has a schema", role)
            return
        self._types(old, new, path, role, label)
        self._values(old, new, path, role, label)
        self._bounds(old, new, path, role, label)
        for keyword in ("pattern", "format"):
            self._constraint(old, new, path, role, label, keyword)
        self._additional(old, new, path, role, label)
        self._object_properties(old, new, path, role, label)
        self._items(old, new, path, role, label)
        self._compositions(old, new, path, role, label)
        for keyword in ("title", "description"):
            if old.get(keyword, ABSENT) != new.get(keyword, ABSENT):
                where, document = self.place(path, keyword, old, new)
                self.emit("description_changed", where, document, f"{label}: {keyword} changed")

    def _types(self, old: dict[str, Any], new: dict[str, Any], path: Path, role: Role, label: str) -> None:
        before, after = _types(old), _types(new)
        if before == after:
            return
        where, document = self.place(path, "type", old, new)
        detail = f"{label}: type {_show_types(before)} → {_show_types(after)}"
        if after is not None and (before is None or after < before):
            self.emit("type_narrowed", where, document, detail, role)
        elif before is not None and (after is None or after > before):
            self.emit("type_widened", where, document, detail, role)
        else:
            self.emit("type_changed", where, document, detail, role)

    def _values(self, old: dict[str, Any], new: dict[str, Any], path: Path, role: Role, label: str) -> None:
        before, after = _allowed_values(old), _allowed_values(new)
        if before == after:
            return
        where, document = self.place(path, _values_keyword(old, new), old, new)
        change = _limit_change(before, after) if before is None or after is None else _values_change(before, after)
        if change is not None:
            kind, detail = change
            self.emit(kind, where, document, f"{label}: values {detail}", role)

    def _bounds(self, old: dict[str, Any], new: dict[str, Any], path: Path, role: Role, label: str) -> None:
        for keyword in (*_LOWER_BOUNDS, *_UPPER_BOUNDS, "multipleOf"):
            before, after = _number(old.get(keyword)), _number(new.get(keyword))
            if before == after:
                continue
            if before is None:
                tightened = True
            elif after is None:
                tightened = False
            elif keyword == "multipleOf":
                tightened = not (before / after).is_integer() or after > before
            else:
                tightened = after > before if keyword in _LOWER_BOUNDS else after < before
            where, document = self.place(path, keyword, old, new)
            detail = f"{label}: {keyword} {show(old.get(keyword, ABSENT))} → {show(new.get(keyword, ABSENT))}"
            self.emit("constraint_tightened" if tightened else "constraint_loosened", where, document, detail, role)

    def _constraint(
        self, old: dict[str, Any], new: dict[str, Any], path: Path, role: Role, label: str, keyword: str
    ) -> None:
        before, after = old.get(keyword, ABSENT), new.get(keyword, ABSENT)
        if before == after:
            return
        where, document = self.place(path, keyword, old, new)
        kind = (
            "constraint_tightened"
            if before is ABSENT
            else "constraint_loosened"
            if after is ABSENT
            else "constraint_changed"
        )
        self.emit(kind, where, document, f"{label}: {keyword} {show(before)} → {show(after)}", role)

    def _additional(self, old: dict[str, Any], new: dict[str, Any], path: Path, role: Role, label: str) -> None:
        before, after = old.get("additionalProperties", True), new.get("additionalProperties", True)
        if before == after:
            return
        if isinstance(before, dict) and isinstance(after, dict):
            where = [*path, "additionalProperties"]
            self.schema(before, after, where, role, f"{label}: additional properties")
            return
        where, document = self.place(path, "additionalProperties", old, new)
        tightened = _openness(after) < _openness(before)
        detail = f"{label}: additionalProperties {show(before)} → {show(after)}"
        self.emit("constraint_tightened" if tightened else "constraint_loosened", where, document, detail, role)

    def _object_properties(self, old: dict[str, Any], new: dict[str, Any], path: Path, role: Role, label: str) -> None:
        old_properties, new_properties = mapping(old.get("properties")), mapping(new.get("properties"))
        old_required, new_required = _required(old), _required(new)
        for name in old_properties:
            if name not in new_properties:
                self.emit(
                    "schema_property_removed",
                    [*path, "properties", name],
                    "old",
                    f"{label}: property {name!r} removed",
                    role,
                )
        for name, schema in new_properties.items():
            place: Path = [*path, "properties", name]
            if name not in old_properties:
                kind = "required_property_added" if name in new_required else "optional_property_added"
                required = "required" if name in new_required else "optional"
                self.emit(kind, place, "new", f"{label}: new {required} property {name!r}", role)
                continue
            self._requirement(name, name in old_required, name in new_required, place, role, label)
            self.schema(old_properties[name], schema, place, role, f"{label}.{name}")

    def _requirement(self, name: str, was: bool, now: bool, place: Path, role: Role, label: str) -> None:
        """A property kept in both schemas that became required, or optional."""
        if now and not was:
            self.emit("became_required", place, "new", f"{label}: property {name!r} is now required", role)
        elif was and not now:
            self.emit("became_optional", place, "new", f"{label}: property {name!r} is no longer required", role)

    def _items(self, old: dict[str, Any], new: dict[str, Any], path: Path, role: Role, label: str) -> None:
        before, after = old.get("items"), new.get("items")
        if isinstance(before, list) and isinstance(after, list):
            for index in range(max(len(before), len(after))):
                self.schema(
                    before[index] if index < len(before) else None,
                    after[index] if index < len(after) else None,
                    [*path, "items", index],
                    role,
                    f"{label}[{index}]",
                )
        elif isinstance(before, dict) or isinstance(after, dict):
            self.schema(before, after, [*path, "items"], role, f"{label}[]")

    def _compositions(self, old: dict[str, Any], new: dict[str, Any], path: Path, role: Role, label: str) -> None:
        for keyword in ("oneOf", "anyOf", "allOf", "not"):
            before, after = old.get(keyword, ABSENT), new.get(keyword, ABSENT)
            if before == after:
                continue
            where, document = self.place(path, keyword, old, new)
            detail = f"{label}: {keyword} changed"
            if keyword in ("oneOf", "anyOf") and isinstance(before, list) and isinstance(after, list):
                if all(item in after for item in before):
                    self.emit("alternatives_widened", where, document, f"{label}: {keyword} gained alternatives", role)
                    continue
                if all(item in before for item in after):
                    self.emit("alternatives_narrowed", where, document, f"{label}: {keyword} lost alternatives", role)
                    continue
            self.emit("alternatives_changed", where, document, detail, role)


def _openness(additional: Any) -> int:
    """``additionalProperties``: true admits any extra member, a schema some, false none."""
    return 2 if additional is True else 0 if additional is False else 1


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _required(schema: dict[str, Any]) -> set[str]:
    required = schema.get("required")
    return {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()


def _types(schema: dict[str, Any]) -> frozenset[str] | None:
    """The JSON types a schema admits (None = any); ``number`` includes ``integer``."""
    declared = schema.get("type")
    if declared is None:
        return None
    types = {declared} if isinstance(declared, str) else {item for item in declared if isinstance(item, str)}
    if "number" in types:
        types.add("integer")
    return frozenset(types)


def _show_types(types: frozenset[str] | None) -> str:
    if types is None:
        return "any"
    shown = types - {"integer"} if "number" in types else types
    return "/".join(sorted(shown))


def _allowed_values(schema: dict[str, Any]) -> list[Any] | None:
    if "const" in schema:
        return [schema["const"]]
    enum = schema.get("enum")
    return enum if isinstance(enum, list) else None


def _values_keyword(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Where a change of the allowed values is pointed at: ``enum`` where the new schema has one (or the old one
    had one the new did not turn into a ``const``), else ``const``."""
    return "enum" if "enum" in new or ("enum" in old and "const" not in new) else "const"


def _limit_change(before: list[Any] | None, after: list[Any] | None) -> tuple[str, str]:
    """The kind and detail of values that became limited (``before`` None) or are no longer limited."""
    if before is None:
        return "enum_narrowed", f"now limited to {show(after)}"
    return "enum_widened", "no longer limited"


def _values_change(before: list[Any], after: list[Any]) -> tuple[str, str] | None:
    """The kind and detail of a change of the allowed values: which were removed and which added; None when the
    same values are only in another order or repeated."""
    removed, added = _missing_from(before, after), _missing_from(after, before)
    if not removed and not added:
        return None
    parts = [f"{change} {show(values)}" for change, values in (("removed", removed), ("added", added)) if values]
    kind = "enum_changed" if removed and added else "enum_narrowed" if removed else "enum_widened"
    return kind, ", ".join(parts)


def _missing_from(values: list[Any], others: list[Any]) -> list[Any]:
    return [value for value in values if value not in others]
