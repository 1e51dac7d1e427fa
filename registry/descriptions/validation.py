"""Minimal Validation of Thing Descriptions (TD 1.1 §Minimal Validation) plus the LMOS rules.

The bundled TD 1.0 / 1.1 JSON Schemas are chosen by ``@context`` and compiled once (jsonschema-rs, a Rust
validator, many times faster than the pure-Python ``jsonschema`` on these schemas). Spot checks cover what a
JSON Schema cannot say. Every error is reported, not only the first.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Sequence
from importlib import resources
from typing import Any

import jsonschema_rs
import msgspec

from registry.descriptions.model import (
    TD10_CONTEXT,
    TD11_CONTEXT,
    LmosKind,
    capability_lists,
    contexts_of,
    lmos_kind,
    lmos_local_name,
    lmos_member,
    strings_of,
)
from registry.descriptions.versions import normalise_version, version_problem
from registry.semantic.rdf import lmos_normalised


class FieldError(msgspec.Struct, frozen=True):
    """One validation problem: ``field`` is a dotted path into the document, ``(root)`` for the top."""

    field: str
    description: str


def field_path(path: Sequence[str | int]) -> str:
    return ".".join(str(part) for part in path) if path else "(root)"


@functools.cache
def _schema_validator(name: str) -> jsonschema_rs.Draft7Validator:
    text = resources.files("registry.descriptions").joinpath("json_schemas", name).read_text(encoding="utf-8")
    # Formats are not asserted: the TD schemas' "iri-reference" rejects URI templates that real TDs use.
    return jsonschema_rs.Draft7Validator(json.loads(text), validate_formats=False)


def _schema_for(document: dict[str, Any]) -> str:
    contexts = contexts_of(document)
    if TD11_CONTEXT not in contexts and TD10_CONTEXT in contexts:
        return "td-v1.0-json-schema-validation.json"
    # TD 1.1, and anything else: the 1.1 schema then names the @context problem precisely.
    return "td-json-schema-validation.json"


def _schema_errors(document: dict[str, Any]) -> Iterator[FieldError]:
    for error in _schema_validator(_schema_for(document)).iter_errors(document):
        yield FieldError(field_path(error.instance_path), error.message)
    registration = document.get("registration")
    if registration is not None:
        extension = _schema_validator("td-discovery-extensions-json-schema.json")
        for error in extension.iter_errors({"registration": registration}):
            yield FieldError(field_path(error.instance_path), error.message)


def _security_errors(document: dict[str, Any]) -> Iterator[FieldError]:
    """Every security scheme name used must be defined in ``securityDefinitions`` (TD 1.1 spot check)."""
    definitions = document.get("securityDefinitions")
    if not isinstance(definitions, dict):
        return
    defined = set(definitions)

    def check(path: list[str | int], value: Any) -> Iterator[FieldError]:
        for name in strings_of(value):
            if name not in defined:
                yield FieldError(field_path(path), f"security scheme {name!r} is not defined in securityDefinitions")

    yield from check(["security"], document.get("security"))
    for scheme_name, scheme in definitions.items():
        if not isinstance(scheme, dict):
            continue
        for combinator in ("oneOf", "allOf"):
            yield from check(["securityDefinitions", scheme_name, combinator], scheme.get(combinator))
    for path, security in _form_securities(document):
        yield from check(path, security)


def _form_securities(document: dict[str, Any]) -> Iterator[tuple[list[str | int], Any]]:
    """The ``security`` of every form that states one (in affordances, then at the top level), with its path."""
    for kind in ("properties", "actions", "events"):
        affordances = document.get(kind)
        if not isinstance(affordances, dict):
            continue
        for name, affordance in affordances.items():
            forms = affordance.get("forms") if isinstance(affordance, dict) else None
            yield from _securities_of(forms, [kind, name, "forms"])
    yield from _securities_of(document.get("forms"), ["forms"])


def _securities_of(forms: Any, path: list[str | int]) -> Iterator[tuple[list[str | int], Any]]:
    for index, form in enumerate(forms if isinstance(forms, list) else []):
        if isinstance(form, dict) and "security" in form:
            yield [*path, index, "security"], form["security"]


# Semantic Versioning 2.0.0, the regular expression from semver.org.
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_HTTP_URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$", re.IGNORECASE)


#: Said of a member stated more than once, under several spellings or as a list.
_ONCE = "is stated more than once (under several spellings of its key, or as a list); a description states one"


def _vendor_errors(reading: dict[str, Any], kind: LmosKind | None) -> Iterator[FieldError]:
    """The vendor of any description (what keys bound to vendors are checked against, and search filters by): one
    ``lmos:metadata`` object with at most one ``lmos:vendor``, an object with one non-empty ``lmos:name`` and an
    optional absolute http(s) ``lmos:url``. ``reading``: the description with its LMOS members keyed by what they
    expand to (fields are named by those canonical keys). Agents and tools must have an object as metadata."""
    metadata_key, metadata = lmos_member(reading, "metadata")
    if metadata_key is None:
        return
    if isinstance(metadata, list):
        yield FieldError(metadata_key, f"{metadata_key} {_ONCE}")
        return
    if not isinstance(metadata, dict):
        if kind is not None:
            yield FieldError(metadata_key, f"{metadata_key} must be an object")
        return
    vendor_key, vendor = lmos_member(metadata, "vendor")
    if vendor_key is not None:
        yield from _vendor_object_errors(f"{metadata_key}.{vendor_key}", vendor)


def _vendor_object_errors(path: str, vendor: Any) -> Iterator[FieldError]:
    """The vendor at ``path``: one object with one non-empty name and an optional absolute http(s) url."""
    if isinstance(vendor, list):
        yield FieldError(path, f"the vendor {_ONCE}")
        return
    if not isinstance(vendor, dict):
        yield FieldError(path, "the vendor must be an object with a name and an optional url")
        return
    name_key, name = lmos_member(vendor, "name")
    if isinstance(name, list):
        yield FieldError(f"{path}.{name_key}", f"the vendor name {_ONCE}")
    elif not isinstance(name, str) or not name.strip():
        yield FieldError(f"{path}.{name_key or 'lmos:name'}", "the vendor needs a non-empty name")
    url_key, url = lmos_member(vendor, "url")
    if url_key is not None and not (isinstance(url, str) and _HTTP_URL.match(url)):
        yield FieldError(f"{path}.{url_key}", "the vendor url must be an absolute http(s) URL")


def _lmos_errors(document: dict[str, Any], kind: LmosKind) -> Iterator[FieldError]:
    """Rules of the LMOS Agent / Tool Description Format (seeds) besides the vendor: a semantic version.

    Agents and tools are resolved by version range, so their ``version.instance`` must be SemVer 2.0.
    """
    label = "agent" if kind is LmosKind.AGENT else "tool"
    version = document.get("version")
    if isinstance(version, dict) and isinstance(version.get("instance"), str):
        instance = version["instance"]
        if version_problem(instance) is None and not SEMVER.match(instance):
            yield FieldError(
                "version.instance",
                f"the {label} version {instance!r} is not a semantic version (MAJOR.MINOR.PATCH, semver.org)",
            )


def _capability_errors(document: dict[str, Any]) -> Iterator[FieldError]:
    """LMOS capability lists (``lmos:capabilities``, ``lmos:providedCapabilities``): a list of objects, each with
    an ``id`` or a ``name``, an optional version that is a semantic version (or a short form such as ``1.0`` that
    completes to one), an optional description and examples. Nothing malformed is dropped or rewritten silently."""
    for path, value in capability_lists(document):
        if not isinstance(value, list):
            yield FieldError(field_path(path), f"{path[-1]} must be a list of capability objects")
            continue
        for index, entry in enumerate(value):
            yield from _capability_entry_errors([*path, index], entry)


def _capability_entry_errors(where: list[str | int], entry: Any) -> Iterator[FieldError]:
    """What is wrong with one entry of a capability list at ``where``."""
    if not isinstance(entry, dict):
        shown = "null" if entry is None else type(entry).__name__
        yield FieldError(field_path(where), f"a capability must be an object with an id or a name, not {shown}")
        return
    members = {lmos_local_name(key) if ":" in key else key: key for key in entry}
    yield from _capability_identifier_errors(where, entry, members)
    yield from _capability_text_errors(where, entry, members)
    examples_key = members.get("examples")
    if examples_key is not None and not _strings(entry[examples_key]):
        yield FieldError(field_path([*where, examples_key]), "the capability examples must be strings")


def _capability_identifier_errors(
    where: list[str | int], entry: dict[str, Any], members: dict[str | None, str]
) -> Iterator[FieldError]:
    """A capability has an id or a name (or both), each a non-empty string. ``members``: each key by its LMOS
    name (None for a key of another vocabulary)."""
    identifiers = [members[name] for name in ("id", "name") if name in members]
    if not identifiers:
        yield FieldError(field_path(where), "a capability needs an id or a name")
    for key in identifiers:
        if not isinstance(entry[key], str) or not entry[key].strip():
            yield FieldError(field_path([*where, key]), f"the capability {key} must be a non-empty string")


def _capability_text_errors(
    where: list[str | int], entry: dict[str, Any], members: dict[str | None, str]
) -> Iterator[FieldError]:
    """A capability's version and description are strings, and its version a semantic version."""
    for name in ("version", "description"):
        key = members.get(name)
        if key is not None and not isinstance(entry[key], str):
            yield FieldError(field_path([*where, key]), f"the capability {name} must be a string")
    version_key = members.get("version")
    if version_key is not None and isinstance(entry[version_key], str):
        yield from _capability_version_errors([*where, version_key], entry[version_key])


def _capability_version_errors(where: list[str | int], version: str) -> Iterator[FieldError]:
    """A capability version must be within bounds and a semantic version or a short form of one."""
    problem = version_problem(version)
    if problem is not None:
        yield FieldError(field_path(where), f"the capability version is out of bounds: {problem}")
    elif normalise_version(version) is None:
        yield FieldError(
            field_path(where),
            f"the capability version {version!r} is not a semantic version "
            "(MAJOR.MINOR.PATCH, or a short form such as 1.0 or v2)",
        )


def _strings(value: Any) -> bool:
    """Whether ``value`` is a string or a list of strings."""
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(item, str) for item in value))


def _version_bounds_errors(document: dict[str, Any]) -> Iterator[FieldError]:
    """Every version a description declares (``version.instance``, ``lmos:version`` beside it or in
    ``lmos:metadata``) within the bounds that let every reader compare it (registry/descriptions/versions.py);
    capability versions are checked with the capabilities."""
    version = document.get("version")
    declared: list[tuple[str, Any]] = []
    if isinstance(version, dict):
        declared.append(("version.instance", version.get("instance")))
    key, value = lmos_member(document, "version")
    declared.append((key or "lmos:version", value))
    metadata_key, metadata = lmos_member(document, "metadata")
    if isinstance(metadata, dict):
        key, value = lmos_member(metadata, "version")
        declared.append((f"{metadata_key}.{key}", value))
    for field, value in declared:
        problem = version_problem(value) if isinstance(value, str) else None
        if problem is not None:
            yield FieldError(field, f"the version is out of bounds: {problem}")


def validate(document: Any) -> list[FieldError]:
    """All problems with ``document`` as a Thing Description; empty when it is valid."""
    if not isinstance(document, dict):
        return [FieldError("(root)", f"a Thing Description must be a JSON object, not {type(document).__name__}")]
    errors = list(_schema_errors(document))
    errors.extend(_security_errors(document))
    # The LMOS rules read each member by what its key expands to, as SPARQL and the other rules do.
    reading = lmos_normalised(document)
    kind = lmos_kind(reading)
    errors.extend(_vendor_errors(reading, kind))
    if kind is not None:
        errors.extend(_lmos_errors(reading, kind))
    errors.extend(_version_bounds_errors(reading))
    errors.extend(_capability_errors(reading))
    return errors
