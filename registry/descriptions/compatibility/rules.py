"""The rules of the compatibility diff: how each kind of change is classified as an input and as an output, and
what it means for a caller (the table in docs/discovery.md)."""

from __future__ import annotations

import dataclasses
from typing import Literal

BREAKING = "breaking"
COMPATIBLE = "compatible"
IDENTICAL = "identical"
#: A change a caller cannot notice (a patch): descriptions, titles, definitions not in force.
PATCH = "patch"

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
