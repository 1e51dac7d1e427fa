"""Actions, properties and events, their forms, the security schemes in force, the security definitions and the
links of two documents."""

from __future__ import annotations

from typing import Any

from registry.descriptions.compatibility.diff import ABSENT, Diff, mapping, show
from registry.descriptions.compatibility.rules import Path, Role
from registry.descriptions.compatibility.schemas import SchemaDiff
from registry.descriptions.model import strings_of

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

#: A form of an affordance: its index in ``forms``, the form, and the operations it serves.
_Form = tuple[int, dict[str, Any], frozenset[str]]
#: Form members compared between paired forms: the member, the kind of its change, and its value when absent.
_FORM_MEMBERS: tuple[tuple[str, str, Any], ...] = (
    ("href", "form_href_changed", ABSENT),
    ("contentType", "form_content_type_changed", "application/json"),
    ("subprotocol", "form_subprotocol_changed", ABSENT),
    ("htv:methodName", "form_method_changed", ABSENT),
)


class ContractDiff(SchemaDiff):
    """The changes of the whole contract a caller depends on: the affordances with their schemas and forms, and
    the security in force."""

    def affordances(
        self, old: dict[str, Any], new: dict[str, Any], old_doc: dict[str, Any], new_doc: dict[str, Any]
    ) -> None:
        for collection, noun in _AFFORDANCES:
            before, after = mapping(old.get(collection)), mapping(new.get(collection))
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
            if old.get(keyword, ABSENT) != new.get(keyword, ABSENT):
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
        self.emit(kind, where, document, f"{name}: {key} {show(old.get(key, ABSENT))} → {show(new.get(key, ABSENT))}")

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
        unmatched_new = _forms(new, collection)
        pairs: list[tuple[_Form, _Form]] = []
        for entry in _forms(old, collection):
            match = _counterpart(entry, unmatched_new)
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
            self._form_ops(old_ops, new_ops, where, new_form, label)
            self._form_members(old_form, new_form, where, label)
            self._form_security(old_form, new_form, old_doc, new_doc, where, label)

    def _form_ops(
        self, old_ops: frozenset[str], new_ops: frozenset[str], where: Path, new_form: dict[str, Any], label: str
    ) -> None:
        """The operations a paired form no longer serves, then those it serves besides."""
        place = [*where, "op"] if "op" in new_form else where
        for kind, ops, serves in (
            ("form_op_removed", old_ops - new_ops, "no longer serves"),
            ("form_op_added", new_ops - old_ops, "now also serves"),
        ):
            if ops:
                self.emit(kind, place, "new", f"{label}: form {serves} {_ops(ops)}")

    def _form_members(self, old_form: dict[str, Any], new_form: dict[str, Any], where: Path, label: str) -> None:
        """The members of a paired form that say where and how to call it."""
        for key, kind, default in _FORM_MEMBERS:
            was, now = old_form.get(key, default), new_form.get(key, default)
            if was != now:
                place, document = self.place(where, key, old_form, new_form)
                self.emit(kind, place, document, f"{label}: form {key} {show(was)} → {show(now)}")

    def _form_security(
        self,
        old_form: dict[str, Any],
        new_form: dict[str, Any],
        old_doc: dict[str, Any],
        new_doc: dict[str, Any],
        where: Path,
        label: str,
    ) -> None:
        """The security of a paired form, when either form states its own."""
        before, after = in_force(old_form, old_doc), in_force(new_form, new_doc)
        if before is None and after is None:
            return
        # A form without security of its own has the document's.
        self.security(
            before if before is not None else in_force(old_doc, old_doc),
            after if after is not None else in_force(new_doc, new_doc),
            *self.place(where, "security", old_form, new_form),
            f"{label}: form security",
        )

    def security(self, before: Any, after: Any, where: Path, document: str, label: str) -> None:
        """Schemes in force compared by what they are, not by the names the documents gave them."""
        if before is None or after is None or before == after:
            return
        old_open, new_open = _is_open(before), _is_open(after)
        detail = f"{label} {show(before)} → {show(after)}"
        if old_open and not new_open:
            self.emit("security_added", where, document, detail)
        elif new_open and not old_open:
            self.emit("security_removed", where, document, detail)
        elif not (old_open and new_open):
            self.emit("security_changed", where, document, detail)


def _ops(ops: frozenset[str]) -> str:
    return ", ".join(sorted(ops))


def _forms(affordance: dict[str, Any], collection: str) -> list[_Form]:
    forms = affordance.get("forms")
    result = []
    for index, form in enumerate(forms if isinstance(forms, list) else []):
        if isinstance(form, dict):
            # Default ops of a read-only or write-only property are left wide: that flag is its own rule.
            ops = frozenset(strings_of(form.get("op"))) or frozenset(_DEFAULT_OPS.get(collection, ()))
            result.append((index, form, ops))
    return result


def _counterpart(entry: _Form, candidates: list[_Form]) -> _Form | None:
    """The first of ``candidates`` that serves the same operations as ``entry``, else the first that serves one of
    them; None when none does."""
    same = next((other for other in candidates if other[2] == entry[2]), None)
    return same if same is not None else next((other for other in candidates if other[2] & entry[2]), None)


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
                    key=show,
                )
    return resolved


def in_force(holder: dict[str, Any], document: dict[str, Any]) -> Any:
    """The resolved schemes ``holder`` (the document, or a form that overrides it) puts in force; None when a form
    has no ``security`` of its own (the document's then applies, compared once)."""
    if "security" not in holder:
        return None
    definitions = mapping(document.get("securityDefinitions"))
    return sorted((_resolve_scheme(name, definitions) for name in strings_of(holder["security"])), key=show)


def _is_open(schemes: Any) -> bool:
    return isinstance(schemes, list) and all(
        isinstance(scheme, dict) and scheme.get("scheme") == "nosec" for scheme in schemes
    )


def _in_force_names(document: dict[str, Any]) -> set[str]:
    names = set(strings_of(document.get("security")))
    for _, affordances in ((c, mapping(document.get(c))) for c, _ in _AFFORDANCES):
        for affordance in affordances.values():
            for form in (
                affordance.get("forms", [])
                if isinstance(affordance, dict) and isinstance(affordance.get("forms"), list)
                else []
            ):
                if isinstance(form, dict):
                    names.update(strings_of(form.get("security")))
    return names


def definition_changes(diff: Diff, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Definitions not in force in either version: a patch (changes to those in force are compared as schemes)."""
    before, after = mapping(old.get("securityDefinitions")), mapping(new.get("securityDefinitions"))
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


def link_changes(diff: Diff, old: dict[str, Any], new: dict[str, Any]) -> None:
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
                "link_removed", ["links", index], "old", f"link {show(link.get('rel', link.get('href')))} removed"
            )
    for key, (index, link) in after.items():
        if key not in before:
            diff.emit("link_added", ["links", index], "new", f"link {show(link.get('rel', link.get('href')))} added")
        elif before[key][1].get("href") != link.get("href"):
            was = before[key][1].get("href", ABSENT)
            diff.emit(
                "link_href_changed",
                ["links", index, "href"] if "href" in link else ["links", index],
                "new",
                f"link {show(key[0])} href {show(was)} → {show(link.get('href', ABSENT))}",
            )
