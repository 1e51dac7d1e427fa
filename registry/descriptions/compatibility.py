"""Are two versions of an agent or tool compatible? A rule-driven diff of the whole contract a caller depends on.

What is compared: actions, properties and events (added, removed, read-only, write-only, observable, safe,
idempotent), their data schemas (types, required, enums and ``const``, bounds, patterns, formats,
``additionalProperties``, nested objects and arrays, ``oneOf``/``anyOf``/``allOf`` conservatively), forms (``href``,
``op``, ``contentType``, ``subprotocol``, the HTTP method), the security schemes in force (document and forms), the
security definitions, ``base``, links and LMOS capabilities (ids and versions).

Every change is classified once, by one rule of :data:`RULES` (documented as a table in ``docs/discovery.md``).
A schema rule is read by the schema's *role*: inputs are what callers send, outputs what they receive, so
narrowing an input breaks callers while narrowing an output does not, and the reverse for widening; a property's
value is both read and written (unless read-only or write-only), so there any narrowing or widening breaks.

Every change names its place by an RFC 6901 JSON Pointer into one of the two documents as sent (``document``:
``old`` for what was removed, ``new`` otherwise) and says what a person can do about it.

The bump a change set requires: major for any breaking change, minor for compatible additions, patch otherwise.
Below 1.0.0 semver promises nothing, so there a minor bump is accepted for breaking changes (as npm's ``^0.x``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import msgspec

from registry.descriptions.model import capability_lists, lmos_local_name, lmos_member, strings_of
from registry.descriptions.summary import version_of
from registry.descriptions.versions import bump, sort_key
from registry.semantic.rdf import lmos_normalised
from registry.wire import Change, Report

BREAKING = "breaking"
COMPATIBLE = "compatible"
IDENTICAL = "identical"
#: A change a caller cannot notice (a patch): descriptions, titles, definitions not in force.
PATCH = "patch"

_BUMP_ORDER = {"none": 0, "prerelease": 0, "patch": 1, "minor": 2, "major": 3}
_BUMP_OF = {BREAKING: "major", COMPATIBLE: "minor", PATCH: "patch"}
_SEVERITY = {PATCH: 0, COMPATIBLE: 1, BREAKING: 2}

Role = Literal["input", "output", "value", "none"]
Path = list[str | int]


@dataclasses.dataclass(frozen=True, slots=True)
class Rule:
    """One kind of change: how it is classified as an input, as an output, and what it means for a caller."""

    kind: str
    #: The change, in words (the first column of the table in docs/discovery.md).
    change: str
    input: str
    output: str
    #: What it means for callers, as an input and as an output; ends every message of this kind.
    consequence: tuple[str, str]
    #: The kinds the same change reports when old and new are swapped.
    inverse: tuple[str, ...]

    def verdict(self, role: Role) -> str:
        if role == "input":
            return self.input
        if role == "output":
            return self.output
        return max(self.input, self.output, key=_SEVERITY.__getitem__)

    def explain(self, role: Role) -> str:
        as_input, as_output = self.consequence
        if role == "input":
            return as_input
        if role == "output":
            return as_output
        if as_input == as_output:
            return as_input
        breaking = [text for text, verdict in ((as_input, self.input), (as_output, self.output)) if verdict == BREAKING]
        return "; ".join(breaking or [as_input])


def _rule(
    kind: str, change: str, verdict: str | tuple[str, str], consequence: str | tuple[str, str], *inverse: str
) -> Rule:
    as_input, as_output = (verdict, verdict) if isinstance(verdict, str) else verdict
    consequences = (consequence, consequence) if isinstance(consequence, str) else consequence
    return Rule(kind, change, as_input, as_output, consequences, inverse or (kind,))


_AGAIN = "clients using the old one must be changed (or keep the old one alongside)"

#: Every rule, in the order of the table in docs/discovery.md.
RULES: dict[str, Rule] = {
    rule.kind: rule
    for rule in (
        _rule("action_removed", "an action is removed", BREAKING, "callers invoking it will fail", "action_added"),
        _rule("action_added", "an action is added", COMPATIBLE, "callers gain it", "action_removed"),
        _rule("property_removed", "a property is removed", BREAKING, "callers using it will fail", "property_added"),
        _rule("property_added", "a property is added", COMPATIBLE, "callers gain it", "property_removed"),
        _rule("event_removed", "an event is removed", BREAKING, "subscribers will fail", "event_added"),
        _rule("event_added", "an event is added", COMPATIBLE, "callers gain it", "event_removed"),
        _rule(
            "became_read_only",
            "a property becomes readOnly",
            BREAKING,
            "callers writing it will fail",
            "became_writable",
        ),
        _rule(
            "became_writable",
            "a property stops being readOnly",
            COMPATIBLE,
            "callers may now write it",
            "became_read_only",
        ),
        _rule(
            "became_write_only",
            "a property becomes writeOnly",
            BREAKING,
            "callers reading it will fail",
            "became_readable",
        ),
        _rule(
            "became_readable",
            "a property stops being writeOnly",
            COMPATIBLE,
            "callers may now read it",
            "became_write_only",
        ),
        _rule(
            "no_longer_observable",
            "a property stops being observable",
            BREAKING,
            "callers observing it will fail",
            "became_observable",
        ),
        _rule(
            "became_observable",
            "a property becomes observable",
            COMPATIBLE,
            "callers may now observe it",
            "no_longer_observable",
        ),
        _rule(
            "no_longer_safe",
            "an action's safe turns false",
            BREAKING,
            "callers that call it freely (it was declared without side effects) may now cause changes",
            "became_safe",
        ),
        _rule("became_safe", "an action's safe turns true", PATCH, "callers may call it more freely", "no_longer_safe"),
        _rule(
            "no_longer_idempotent",
            "an action's idempotent turns false",
            BREAKING,
            "callers that retry it may now repeat its effect",
            "became_idempotent",
        ),
        _rule(
            "became_idempotent",
            "an action's idempotent turns true",
            PATCH,
            "callers may retry it",
            "no_longer_idempotent",
        ),
        _rule(
            "form_removed",
            "a form (an operation's endpoint) is removed",
            BREAKING,
            "clients using it will fail",
            "form_added",
        ),
        _rule("form_added", "a form is added", COMPATIBLE, "clients gain another way in", "form_removed"),
        _rule("form_href_changed", "a form's href changes", BREAKING, _AGAIN),
        _rule("form_op_removed", "a form no longer serves an operation (op)", BREAKING, _AGAIN, "form_op_added"),
        _rule(
            "form_op_added", "a form serves another operation (op)", COMPATIBLE, "clients gain it", "form_op_removed"
        ),
        _rule("form_content_type_changed", "a form's contentType changes", BREAKING, _AGAIN),
        _rule("form_subprotocol_changed", "a form's subprotocol changes", BREAKING, _AGAIN),
        _rule("form_method_changed", "a form's HTTP method (htv:methodName) changes", BREAKING, _AGAIN),
        _rule(
            "security_added",
            "security is required where there was none (nosec before)",
            BREAKING,
            "clients without credentials will be refused",
            "security_removed",
        ),
        _rule(
            "security_removed",
            "security is no longer required (nosec now)",
            PATCH,
            "clients may drop their credentials",
            "security_added",
        ),
        _rule(
            "security_changed",
            "the security schemes in force change (scheme, location, flow, …)",
            BREAKING,
            "clients authenticating the old way will be refused",
        ),
        _rule(
            "security_definition_added",
            "a security definition not in force is added",
            PATCH,
            "nothing changes for callers",
            "security_definition_removed",
        ),
        _rule(
            "security_definition_removed",
            "a security definition not in force is removed",
            PATCH,
            "nothing changes for callers",
            "security_definition_added",
        ),
        _rule("base_changed", "base (the URL relative hrefs resolve against) changes", BREAKING, _AGAIN),
        _rule("link_removed", "a link is removed", BREAKING, "clients following it will fail", "link_added"),
        _rule("link_added", "a link is added", COMPATIBLE, "clients gain it", "link_removed"),
        _rule("link_href_changed", "a link's href changes", BREAKING, "clients following the old target will fail"),
        _rule(
            "capability_removed",
            "an LMOS capability is removed",
            BREAKING,
            "resolvers requiring it will fail",
            "capability_added",
        ),
        _rule("capability_added", "an LMOS capability is added", COMPATIBLE, "resolvers gain it", "capability_removed"),
        _rule(
            "capability_major_bump",
            "a capability's major version rises",
            BREAKING,
            "requirements on the old major version no longer match",
            "capability_downgrade",
        ),
        _rule(
            "capability_minor_bump",
            "a capability's minor version rises",
            COMPATIBLE,
            "callers gain features",
            "capability_downgrade",
        ),
        _rule("capability_patch_bump", "a capability's patch version rises", PATCH, "a fix", "capability_downgrade"),
        _rule(
            "capability_downgrade",
            "a capability's version goes down",
            BREAKING,
            "requirements on the higher version no longer match",
            "capability_major_bump",
            "capability_minor_bump",
            "capability_patch_bump",
        ),
        _rule(
            "capability_version_changed",
            "a capability's version is added, removed or not comparable",
            BREAKING,
            "requirements on its version may no longer match",
        ),
        # Data schemas: the verdict depends on the role (input, output); a property value takes the worse of both.
        _rule(
            "schema_added",
            "a data schema is declared where there was none",
            (BREAKING, COMPATIBLE),
            ("callers' data is now checked against it", "callers learn the shape of what they receive"),
            "schema_removed",
        ),
        _rule(
            "schema_removed",
            "a data schema is removed",
            (COMPATIBLE, BREAKING),
            ("callers' data is no longer checked", "callers no longer know the shape of what they receive"),
            "schema_added",
        ),
        _rule(
            "type_narrowed",
            "fewer JSON types are allowed",
            (BREAKING, PATCH),
            ("callers sending values of the removed types will be refused", "callers receive fewer kinds of values"),
            "type_widened",
        ),
        _rule(
            "type_widened",
            "more JSON types are allowed",
            (COMPATIBLE, BREAKING),
            ("callers may send more kinds of values", "callers may receive values of types they do not handle"),
            "type_narrowed",
        ),
        _rule(
            "type_changed",
            "the JSON type changes (neither includes the other)",
            BREAKING,
            "callers sending or expecting the old type will fail",
        ),
        _rule(
            "enum_narrowed",
            "fewer values are allowed (enum, const)",
            (BREAKING, PATCH),
            ("callers sending the removed values will be refused", "callers receive fewer values"),
            "enum_widened",
        ),
        _rule(
            "enum_widened",
            "more values are allowed (enum, const)",
            (COMPATIBLE, BREAKING),
            ("callers may send more values", "callers may receive values they do not handle"),
            "enum_narrowed",
        ),
        _rule(
            "enum_changed",
            "the allowed values change (some added, some removed)",
            BREAKING,
            "callers sending or expecting the removed values will fail",
        ),
        _rule(
            "constraint_tightened",
            "a bound, pattern, format or additionalProperties: false is added or tightened",
            (BREAKING, PATCH),
            (
                "callers sending values outside the new constraint will be refused",
                "callers receive values within a tighter constraint",
            ),
            "constraint_loosened",
        ),
        _rule(
            "constraint_loosened",
            "a bound, pattern, format or additionalProperties: false is removed or loosened",
            (COMPATIBLE, BREAKING),
            ("callers may send more values", "callers may receive values outside the old constraint"),
            "constraint_tightened",
        ),
        _rule(
            "constraint_changed",
            "a pattern or format changes",
            BREAKING,
            "values matching only the old one will be refused or unexpected",
        ),
        _rule(
            "required_property_added",
            "a required property is added to an object",
            (BREAKING, COMPATIBLE),
            ("callers that do not send it will be refused", "callers receive more"),
            "schema_property_removed",
        ),
        _rule(
            "optional_property_added",
            "an optional property is added to an object",
            COMPATIBLE,
            ("callers may send it", "callers receive more"),
            "schema_property_removed",
        ),
        _rule(
            "schema_property_removed",
            "a property is removed from an object",
            BREAKING,
            ("callers sending it may be refused", "callers reading it will fail"),
            "required_property_added",
            "optional_property_added",
        ),
        _rule(
            "became_required",
            "an object's property becomes required",
            (BREAKING, PATCH),
            ("callers that do not send it will be refused", "callers can now rely on it"),
            "became_optional",
        ),
        _rule(
            "became_optional",
            "an object's property stops being required",
            (COMPATIBLE, BREAKING),
            ("callers may leave it out", "callers that rely on it may fail"),
            "became_required",
        ),
        _rule(
            "alternatives_narrowed",
            "oneOf/anyOf loses alternatives",
            (BREAKING, PATCH),
            ("callers sending the removed alternatives will be refused", "callers receive fewer alternatives"),
            "alternatives_widened",
        ),
        _rule(
            "alternatives_widened",
            "oneOf/anyOf gains alternatives",
            (COMPATIBLE, BREAKING),
            ("callers may send more alternatives", "callers may receive alternatives they do not handle"),
            "alternatives_narrowed",
        ),
        _rule(
            "alternatives_changed",
            "oneOf/anyOf/allOf/not change otherwise (compared conservatively)",
            BREAKING,
            "values valid under the old composition may be refused or unexpected",
        ),
        _rule("description_changed", "a title or description changes", PATCH, "documentation only"),
    )
}


#: Schema keywords whose larger value admits more instances (lower bounds) and fewer (upper bounds).
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
_AFFORDANCES = (("actions", "action"), ("properties", "property"), ("events", "event"))
#: Event schemas: data is received; subscription, cancellation and dataResponse are sent.
_EVENT_SCHEMAS: tuple[tuple[str, Role], ...] = (
    ("data", "output"),
    ("subscription", "input"),
    ("cancellation", "input"),
    ("dataResponse", "input"),
)
_DEFAULT_OPS = {
    "actions": ("invokeaction",),
    "properties": ("readproperty", "writeproperty"),
    "events": ("subscribeevent", "unsubscribeevent"),
    "": ("readallproperties",),
}


def pointer(path: Sequence[str | int]) -> str:
    """RFC 6901: ``~`` as ``~0``, ``/`` as ``~1``; array members by index."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _show(value: Any) -> str:
    if value is _ABSENT:
        return "absent"
    return msgspec.json.encode(value).decode()


_ABSENT: Any = object()


class _Diff:
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

    # -- data schemas

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
            if old.get(keyword, _ABSENT) != new.get(keyword, _ABSENT):
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
        key = "enum" if "enum" in new or ("enum" in old and "const" not in new) else "const"
        where, document = self.place(path, key, old, new)
        if before is None or after is None:
            kind = "enum_narrowed" if before is None else "enum_widened"
            detail = f"{label}: values {'now limited to ' + _show(after) if before is None else 'no longer limited'}"
            self.emit(kind, where, document, detail, role)
            return
        removed = [value for value in before if value not in after]
        added = [value for value in after if value not in before]
        if not removed and not added:
            return
        parts = [f"removed {_show(removed)}"] if removed else []
        parts += [f"added {_show(added)}"] if added else []
        kind = "enum_changed" if removed and added else "enum_narrowed" if removed else "enum_widened"
        self.emit(kind, where, document, f"{label}: values {', '.join(parts)}", role)

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
            detail = f"{label}: {keyword} {_show(old.get(keyword, _ABSENT))} → {_show(new.get(keyword, _ABSENT))}"
            self.emit("constraint_tightened" if tightened else "constraint_loosened", where, document, detail, role)

    def _constraint(
        self, old: dict[str, Any], new: dict[str, Any], path: Path, role: Role, label: str, keyword: str
    ) -> None:
        before, after = old.get(keyword, _ABSENT), new.get(keyword, _ABSENT)
        if before == after:
            return
        where, document = self.place(path, keyword, old, new)
        kind = (
            "constraint_tightened"
            if before is _ABSENT
            else "constraint_loosened"
            if after is _ABSENT
            else "constraint_changed"
        )
        self.emit(kind, where, document, f"{label}: {keyword} {_show(before)} → {_show(after)}", role)

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
        detail = f"{label}: additionalProperties {_show(before)} → {_show(after)}"
        self.emit("constraint_tightened" if tightened else "constraint_loosened", where, document, detail, role)

    def _object_properties(self, old: dict[str, Any], new: dict[str, Any], path: Path, role: Role, label: str) -> None:
        old_properties, new_properties = _mapping(old.get("properties")), _mapping(new.get("properties"))
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
            if name in new_required and name not in old_required:
                self.emit("became_required", place, "new", f"{label}: property {name!r} is now required", role)
            elif name in old_required and name not in new_required:
                self.emit("became_optional", place, "new", f"{label}: property {name!r} is no longer required", role)
            self.schema(old_properties[name], schema, place, role, f"{label}.{name}")

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
            before, after = old.get(keyword, _ABSENT), new.get(keyword, _ABSENT)
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

    # -- affordances

    def affordances(
        self, old: dict[str, Any], new: dict[str, Any], old_doc: dict[str, Any], new_doc: dict[str, Any]
    ) -> None:
        for collection, noun in _AFFORDANCES:
            before, after = _mapping(old.get(collection)), _mapping(new.get(collection))
            for name in before:
                if name not in after:
                    self.emit(f"{noun}_removed", [collection, name], "old", f"{noun} {name!r} removed")
            for name, affordance in after.items():
                if name not in before:
                    self.emit(f"{noun}_added", [collection, name], "new", f"{noun} {name!r} added")
                    continue
                if isinstance(before[name], dict) and isinstance(affordance, dict):
                    self.affordance(collection, name, before[name], affordance, old_doc, new_doc)

    def affordance(
        self,
        collection: str,
        name: str,
        old: dict[str, Any],
        new: dict[str, Any],
        old_doc: dict[str, Any],
        new_doc: dict[str, Any],
    ) -> None:
        path: Path = [collection, name]
        if collection == "actions":
            self.schema(old.get("input"), new.get("input"), [*path, "input"], "input", f"{name} input")
            self.schema(old.get("output"), new.get("output"), [*path, "output"], "output", f"{name} output")
            self._flag(old, new, path, name, "safe", "no_longer_safe", "became_safe")
            self._flag(old, new, path, name, "idempotent", "no_longer_idempotent", "became_idempotent")
        elif collection == "events":
            for key, event_role in _EVENT_SCHEMAS:
                self.schema(old.get(key), new.get(key), [*path, key], event_role, f"{name} {key}")
        else:
            for key, became, lost in (
                ("readOnly", "became_read_only", "became_writable"),
                ("writeOnly", "became_write_only", "became_readable"),
            ):
                self._flag(old, new, path, name, key, lost, became)
            self._flag(old, new, path, name, "observable", "no_longer_observable", "became_observable")
            read_only, write_only = bool(new.get("readOnly")), bool(new.get("writeOnly"))
            role: Role = "output" if read_only else "input" if write_only else "value"
            # The property is its own data schema (title and description compared with it).
            self.schema(old, new, path, role, f"property {name}")
        for keyword in ("title", "description") if collection != "properties" else ():
            if old.get(keyword, _ABSENT) != new.get(keyword, _ABSENT):
                where, document = self.place(path, keyword, old, new)
                self.emit("description_changed", where, document, f"{name}: {keyword} changed")
        self.forms(old, new, path, collection, old_doc, new_doc, name)

    def _flag(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        path: Path,
        name: str,
        key: str,
        lost: str,
        gained: str,
    ) -> None:
        """A boolean member (false when absent): ``lost`` when it turns false, ``gained`` when it turns true."""
        before, after = bool(old.get(key)), bool(new.get(key))
        if before == after:
            return
        where, document = self.place(path, key, old, new)
        kind = gained if after else lost
        self.emit(
            kind, where, document, f"{name}: {key} {_show(old.get(key, _ABSENT))} → {_show(new.get(key, _ABSENT))}"
        )

    def forms(
        self,
        old: dict[str, Any],
        new: dict[str, Any],
        path: Path,
        collection: str,
        old_doc: dict[str, Any],
        new_doc: dict[str, Any],
        label: str,
    ) -> None:
        """Forms are paired by the operations they serve (then by order among those), not by position."""
        before, after = _forms(old, collection), _forms(new, collection)
        unmatched_new = list(after)
        pairs: list[tuple[tuple[int, dict[str, Any], frozenset[str]], tuple[int, dict[str, Any], frozenset[str]]]] = []
        for entry in before:
            match = next((other for other in unmatched_new if other[2] == entry[2]), None)
            if match is None:
                match = next((other for other in unmatched_new if other[2] & entry[2]), None)
            if match is None:
                self.emit(
                    "form_removed", [*path, "forms", entry[0]], "old", f"{label}: form for {_ops(entry[2])} removed"
                )
                continue
            unmatched_new.remove(match)
            pairs.append((entry, match))
        for index, _, ops in unmatched_new:
            self.emit("form_added", [*path, "forms", index], "new", f"{label}: form for {_ops(ops)} added")
        for (_, old_form, old_ops), (new_index, new_form, new_ops) in pairs:
            where: Path = [*path, "forms", new_index]
            if old_ops - new_ops:
                self.emit(
                    "form_op_removed",
                    [*where, "op"] if "op" in new_form else where,
                    "new",
                    f"{label}: form no longer serves {_ops(old_ops - new_ops)}",
                )
            if new_ops - old_ops:
                self.emit(
                    "form_op_added",
                    [*where, "op"] if "op" in new_form else where,
                    "new",
                    f"{label}: form now also serves {_ops(new_ops - old_ops)}",
                )
            for key, kind, default in (
                ("href", "form_href_changed", _ABSENT),
                ("contentType", "form_content_type_changed", "application/json"),
                ("subprotocol", "form_subprotocol_changed", _ABSENT),
                ("htv:methodName", "form_method_changed", _ABSENT),
            ):
                was, now = old_form.get(key, default), new_form.get(key, default)
                if was != now:
                    place, document = self.place(where, key, old_form, new_form)
                    self.emit(kind, place, document, f"{label}: form {key} {_show(was)} → {_show(now)}")
            before_security, after_security = _in_force(old_form, old_doc), _in_force(new_form, new_doc)
            if before_security is not None or after_security is not None:
                # A form without security of its own has the document's.
                self.security(
                    before_security if before_security is not None else _in_force(old_doc, old_doc),
                    after_security if after_security is not None else _in_force(new_doc, new_doc),
                    *self.place(where, "security", old_form, new_form),
                    f"{label}: form security",
                )

    def security(self, before: Any, after: Any, where: Path, document: str, label: str) -> None:
        """Schemes in force compared by what they are, not by the names the documents gave them."""
        if before is None or after is None or before == after:
            return
        old_open, new_open = _is_open(before), _is_open(after)
        detail = f"{label} {_show(before)} → {_show(after)}"
        if old_open and not new_open:
            self.emit("security_added", where, document, detail)
        elif new_open and not old_open:
            self.emit("security_removed", where, document, detail)
        elif not (old_open and new_open):
            self.emit("security_changed", where, document, detail)


def _openness(additional: Any) -> int:
    """``additionalProperties``: true admits any extra member, a schema some, false none."""
    return 2 if additional is True else 0 if additional is False else 1


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


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


def _ops(ops: frozenset[str]) -> str:
    return ", ".join(sorted(ops))


def _forms(affordance: dict[str, Any], collection: str) -> list[tuple[int, dict[str, Any], frozenset[str]]]:
    forms = affordance.get("forms")
    result = []
    for index, form in enumerate(forms if isinstance(forms, list) else []):
        if isinstance(form, dict):
            # Default ops of a read-only or write-only property are left wide: that flag is its own rule.
            ops = frozenset(strings_of(form.get("op"))) or frozenset(_DEFAULT_OPS.get(collection, ()))
            result.append((index, form, ops))
    return result


def _resolve_scheme(name: str, definitions: dict[str, Any], depth: int = 0) -> Any:
    """A security definition with the names it combines (``combo`` oneOf/allOf) replaced by their definitions."""
    definition = definitions.get(name)
    if not isinstance(definition, dict):
        return {"undefined": name}
    resolved = {key: value for key, value in definition.items() if key not in ("description", "descriptions")}
    if depth < 4:
        for combinator in ("oneOf", "allOf"):
            if combinator in resolved:
                resolved[combinator] = sorted(
                    (_resolve_scheme(item, definitions, depth + 1) for item in strings_of(resolved[combinator])),
                    key=_show,
                )
    return resolved


def _in_force(holder: dict[str, Any], document: dict[str, Any]) -> Any:
    """The resolved schemes ``holder`` (the document, or a form that overrides it) puts in force; None when a form
    has no ``security`` of its own (the document's then applies, compared once)."""
    if "security" not in holder:
        return None
    definitions = _mapping(document.get("securityDefinitions"))
    return sorted((_resolve_scheme(name, definitions) for name in strings_of(holder["security"])), key=_show)


def _is_open(schemes: Any) -> bool:
    return isinstance(schemes, list) and all(
        isinstance(scheme, dict) and scheme.get("scheme") == "nosec" for scheme in schemes
    )


def _in_force_names(document: dict[str, Any]) -> set[str]:
    names = set(strings_of(document.get("security")))
    for _, affordances in ((c, _mapping(document.get(c))) for c, _ in _AFFORDANCES):
        for affordance in affordances.values():
            for form in (
                affordance.get("forms", [])
                if isinstance(affordance, dict) and isinstance(affordance.get("forms"), list)
                else []
            ):
                if isinstance(form, dict):
                    names.update(strings_of(form.get("security")))
    return names


def _definitions(diff: _Diff, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Definitions not in force in either version: a patch (changes to those in force are compared as schemes)."""
    before, after = _mapping(old.get("securityDefinitions")), _mapping(new.get("securityDefinitions"))
    used = _in_force_names(old) | _in_force_names(new)
    for name in before:
        if name not in after and name not in used:
            diff.emit(
                "security_definition_removed",
                ["securityDefinitions", name],
                "old",
                f"security definition {name!r} removed",
            )
    for name in after:
        if name not in before and name not in used:
            diff.emit(
                "security_definition_added", ["securityDefinitions", name], "new", f"security definition {name!r} added"
            )


def _links(diff: _Diff, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Links a client follows, matched by relation (and anchor); without a relation by target."""

    def keyed(document: dict[str, Any]) -> dict[tuple[Any, ...], tuple[int, dict[str, Any]]]:
        links = document.get("links")
        result: dict[tuple[Any, ...], tuple[int, dict[str, Any]]] = {}
        for index, link in enumerate(links if isinstance(links, list) else []):
            if isinstance(link, dict):
                key = (link.get("rel"), link.get("anchor")) if link.get("rel") else (None, link.get("href"))
                result.setdefault(key, (index, link))
        return result

    before, after = keyed(old), keyed(new)
    for key, (index, link) in before.items():
        if key not in after:
            diff.emit(
                "link_removed", ["links", index], "old", f"link {_show(link.get('rel', link.get('href')))} removed"
            )
    for key, (index, link) in after.items():
        if key not in before:
            diff.emit("link_added", ["links", index], "new", f"link {_show(link.get('rel', link.get('href')))} added")
        elif before[key][1].get("href") != link.get("href"):
            was = before[key][1].get("href", _ABSENT)
            diff.emit(
                "link_href_changed",
                ["links", index, "href"] if "href" in link else ["links", index],
                "new",
                f"link {_show(key[0])} href {_show(was)} → {_show(link.get('href', _ABSENT))}",
            )


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


def _capability_changes(diff: _Diff, old: dict[str, Any], new: dict[str, Any]) -> None:
    before, after = _capabilities(old), _capabilities(new)
    for key, entry in before.items():
        if key not in after:
            diff.emit("capability_removed", entry.path, "old", f"capability {key!r} removed")
    for key, entry in after.items():
        if key not in before:
            diff.emit("capability_added", entry.path, "new", f"capability {key!r} added")
            continue
        was, now = before[key].version, entry.version
        if was == now:
            continue
        version_key = next((key for key in entry.entry if _local(key) == "version"), None)
        where = entry.path if version_key is None else [*entry.path, version_key]
        change = bump(was, now) if isinstance(was, str) and isinstance(now, str) else "unknown"
        kind = {
            "major": "capability_major_bump",
            "minor": "capability_minor_bump",
            "patch": "capability_patch_bump",
            "prerelease": "capability_patch_bump",
            "downgrade": "capability_downgrade",
        }.get(change, "capability_version_changed")
        if change == "none":
            continue
        diff.emit(kind, where, "new", f"capability {key!r} version {_show(was)} → {_show(now)}")


def diff_documents(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    diff = _Diff()
    if old.get("base", _ABSENT) != new.get("base", _ABSENT):
        where, document = diff.place([], "base", old, new)
        diff.emit(
            "base_changed",
            where,
            document,
            f"base {_show(old.get('base', _ABSENT))} → {_show(new.get('base', _ABSENT))}",
        )
    diff.security(_in_force(old, old), _in_force(new, new), *diff.place([], "security", old, new), "security")
    _definitions(diff, old, new)
    diff.forms(old, new, [], "", old, new, "the description")
    diff.affordances(old, new, old, new)
    _links(diff, old, new)
    _capability_changes(diff, old, new)
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
