"""Typed results of the SDK.

The discovery types mirror the server's wire types (registry/discovery.py and the description types it uses):
importing those would pull the server stack (SQLAlchemy, node-semver) into a client that needs only httpx and
msgspec. tests/unit/test_client_models.py keeps each mirror's fields in step with its server type.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import msgspec


class Notice(msgspec.Struct, frozen=True):
    code: str
    message: str
    field: str | None = None


class WriteResult(msgspec.Struct, frozen=True):
    """Outcome of a registration, replacement or patch."""

    id: str
    created: bool
    etag: str | None
    notices: list[Notice] = msgspec.field(default_factory=list)


class Lease(msgspec.Struct, frozen=True, rename={"last_seen": "lastSeen"}):
    id: str
    ttl: float
    expires: str
    last_seen: str


class Event(msgspec.Struct, frozen=True):
    """One change event: ``type`` is thing_created/updated/deleted, ``seq`` the event id to resume after."""

    type: str
    seq: int
    data: dict[str, Any]

    @property
    def thing_id(self) -> str:
        return str(self.data.get("id", ""))


# -- search and summaries


class Vendor(msgspec.Struct, frozen=True):
    name: str | None = None
    url: str | None = None


class CapabilityBrief(msgspec.Struct, frozen=True):
    name: str
    #: Where the capability was read from: lmos (lmos:capabilities), action (an agent's) or function (a tool's).
    source: str
    id: str | None = None
    version: str | None = None


class SearchItem(msgspec.Struct, frozen=True):
    id: str
    #: agent, tool or thing.
    kind: str
    modified: dt.datetime
    title: str | None = None
    description: str | None = None
    vendor: Vendor | None = None
    version: str | None = None
    types: list[str] = msgspec.field(default_factory=list)
    capabilities: list[CapabilityBrief] = msgspec.field(default_factory=list)
    expires: dt.datetime | None = None
    #: Full-text rank when sorted by relevance.
    score: float | None = None


class FacetValue(msgspec.Struct, frozen=True):
    value: str
    count: int


class Facets(msgspec.Struct, frozen=True):
    kind: list[FacetValue]
    vendor: list[FacetValue]
    capability: list[FacetValue]


class SearchResult(msgspec.Struct, frozen=True):
    items: list[SearchItem]
    #: Pass as ``cursor`` for the next page; None on the last page.
    next_cursor: str | None
    #: Counts over all matches, when asked for with ``facets=True``.
    facets: Facets | None = None


class Capability(msgspec.Struct, frozen=True):
    name: str
    source: str
    id: str | None = None
    version: str | None = None
    description: str | None = None
    examples: list[str] = msgspec.field(default_factory=list)
    input: dict[str, Any] | None = None
    output: dict[str, Any] | None = None


class LintWarning(msgspec.Struct, frozen=True):
    code: str
    message: str
    field: str


class ThingSummary(msgspec.Struct, frozen=True):
    id: str
    kind: str
    modified: dt.datetime
    title: str | None = None
    description: str | None = None
    languages: list[str] = msgspec.field(default_factory=list)
    vendor: Vendor | None = None
    version: str | None = None
    types: list[str] = msgspec.field(default_factory=list)
    capabilities: list[Capability] = msgspec.field(default_factory=list)
    lint: list[LintWarning] = msgspec.field(default_factory=list)
    expires: dt.datetime | None = None


# -- versions and compatibility


class Change(msgspec.Struct, frozen=True):
    #: JSON pointer into the description.
    pointer: str
    kind: str
    breaking: bool
    message: str
    #: The bump this change needs on its own: major, minor or patch.
    bump: str


class Report(msgspec.Struct, frozen=True):
    #: identical, compatible or breaking.
    verdict: str
    changes: list[Change]
    required_bump: str
    declared_bump: str | None = None
    #: False when the declared version change is smaller than the changes require.
    honest: bool | None = None


class VersionInfo(msgspec.Struct, frozen=True):
    version: str
    registered: dt.datetime
    revision: int
    #: True for the version the current description has.
    current: bool
    previous_version: str | None = None
    #: Compatibility with ``previous_version``: identical, compatible or breaking.
    verdict: str | None = None
    honest: bool | None = None


class VersionList(msgspec.Struct, frozen=True):
    id: str
    #: Newest first; with ``satisfies`` only the versions in that range, so the first is the newest match.
    items: list[VersionInfo]


class VersionDetail(msgspec.Struct, frozen=True):
    id: str
    version: str
    registered: dt.datetime
    revision: int
    current: bool
    document: dict[str, Any]
    previous_version: str | None = None
    compatibility: Report | None = None


class CompatibilityResult(msgspec.Struct, frozen=True, rename={"from_": "from"}):
    verdict: str
    changes: list[Change]
    required_bump: str
    from_: str | None = None
    to: str | None = None
    declared_bump: str | None = None
    honest: bool | None = None


# -- resolution


class Requirement(msgspec.Struct, frozen=True, omit_defaults=True):
    #: Capability id (e.g. ``urn:telekom:capability:billing:view``) or name (case-insensitive).
    capability: str
    #: npm range (``^1.2``, ``~1.2.3``, ``>=1 <2``, ``1.x``) or Ivy/Maven range (``[1.0,2.0)``).
    range: str = "*"
    strategy: Literal["highest", "lowest", "closest"] = "highest"
    #: The version ``closest`` aims at.
    closest_to: str | None = None


class Provider(msgspec.Struct, frozen=True):
    id: str
    #: None for a provider that declares no version (only ranges accepting any version match it).
    version: str | None
    capability: str
    capability_id: str | None = None
    title: str | None = None
    vendor: str | None = None


class Resolution(msgspec.Struct, frozen=True):
    capability: str
    range: str
    strategy: str
    resolved: bool
    provider: Provider | None = None
    alternatives: list[Provider] = msgspec.field(default_factory=list)
    #: Why it is unresolved: no_provider, no_version_in_range or provider_expired.
    reason: str | None = None
    detail: str | None = None


class ResolveResult(msgspec.Struct, frozen=True):
    #: True when every requirement is resolved.
    resolved: bool
    results: list[Resolution]


# -- tool formats


class ImportedTool(msgspec.Struct, frozen=True):
    id: str
    #: Where the stored description is, relative to the directory (``/things/{id}``).
    location: str
    created: bool
    #: Lint and other notices of the registration (the ``Registry-Notices`` header).
    notices: list[Notice] = msgspec.field(default_factory=list)


# -- SPARQL results (W3C SPARQL 1.1 Query Results JSON Format)


class Term(msgspec.Struct, frozen=True, omit_defaults=True, rename={"language": "xml:lang"}):
    #: uri, literal, bnode (or triple).
    type: str
    value: str
    datatype: str | None = None
    language: str | None = None


class SparqlHead(msgspec.Struct, frozen=True, omit_defaults=True):
    vars: list[str] = msgspec.field(default_factory=list)
    link: list[str] = msgspec.field(default_factory=list)


class SparqlBindings(msgspec.Struct, frozen=True):
    bindings: list[dict[str, Term]]


class SparqlResults(msgspec.Struct, frozen=True, omit_defaults=True):
    """The answer to a SELECT (``results``) or an ASK (``boolean``)."""

    head: SparqlHead
    results: SparqlBindings | None = None
    boolean: bool | None = None

    @property
    def variables(self) -> list[str]:
        return self.head.vars

    def rows(self) -> list[dict[str, str]]:
        """Each solution as {variable: value} (unbound variables left out)."""
        if self.results is None:
            return []
        return [{name: term.value for name, term in binding.items()} for binding in self.results.bindings]


__all__ = [
    "Capability",
    "CapabilityBrief",
    "Change",
    "CompatibilityResult",
    "Event",
    "FacetValue",
    "Facets",
    "ImportedTool",
    "Lease",
    "LintWarning",
    "Notice",
    "Provider",
    "Report",
    "Requirement",
    "Resolution",
    "ResolveResult",
    "SearchItem",
    "SearchResult",
    "SparqlBindings",
    "SparqlHead",
    "SparqlResults",
    "Term",
    "ThingSummary",
    "Vendor",
    "VersionDetail",
    "VersionInfo",
    "VersionList",
    "WriteResult",
]
