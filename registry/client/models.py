"""Typed results of the SDK: the server's wire types (registry/wire.py) plus what only the client needs."""

from __future__ import annotations

from typing import Any

import msgspec

from registry.client.vocabulary import EventType
from registry.found import Findings, Form, Found, Invocation, MatchedCapability
from registry.wire import (
    BatchItem,
    BatchResult,
    Capability,
    CapabilityBrief,
    Change,
    CompatibilityResult,
    Facets,
    FacetValue,
    ImportedAgent,
    ImportedTool,
    LintWarning,
    Notice,
    Provider,
    RecentChange,
    RecentChanges,
    Report,
    Requirement,
    Resolution,
    ResolveResult,
    SearchItem,
    SearchResult,
    ThingSummary,
    Vendor,
    VersionDetail,
    VersionInfo,
    VersionList,
    WriteNotices,
)


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
    """One change event: ``type`` is thing_created/updated/deleted/transferred, ``seq`` the change's sequence (the
    ETag of the revision), ``id`` the event id to resume after: ``seq``, or with the stream's position when the
    change was delivered while earlier ones were pending (a change committed late comes after later sequences)."""

    type: EventType
    seq: int
    data: dict[str, Any]
    id: str = ""

    @property
    def thing_id(self) -> str:
        return str(self.data.get("id", ""))


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
    "BatchItem",
    "BatchResult",
    "Capability",
    "CapabilityBrief",
    "Change",
    "CompatibilityResult",
    "Event",
    "FacetValue",
    "Facets",
    "Findings",
    "Form",
    "Found",
    "ImportedAgent",
    "ImportedTool",
    "Invocation",
    "Lease",
    "LintWarning",
    "MatchedCapability",
    "Notice",
    "Provider",
    "RecentChange",
    "RecentChanges",
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
    "WriteNotices",
    "WriteResult",
]
