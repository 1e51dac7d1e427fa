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

from registry.descriptions.compatibility.capabilities import CapabilityEntry, capability_entries
from registry.descriptions.compatibility.diff import pointer
from registry.descriptions.compatibility.report import compare_documents, diff_documents, required_bump
from registry.descriptions.compatibility.rules import BREAKING, COMPATIBLE, IDENTICAL, PATCH, RULES, Role, Rule

__all__ = [
    "BREAKING",
    "COMPATIBLE",
    "IDENTICAL",
    "PATCH",
    "RULES",
    "CapabilityEntry",
    "Role",
    "Rule",
    "capability_entries",
    "compare_documents",
    "diff_documents",
    "pointer",
    "required_bump",
]
