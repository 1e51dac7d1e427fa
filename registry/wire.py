"""Wire types of the directory's JSON APIs, shared by the server and the SDK.

Plain msgspec Structs with no dependency beyond msgspec, so ``registry.client`` can import them without the server
stack. On the server they are the response models Litestar documents in the OpenAPI schema; in the SDK they are
the typed results.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import msgspec


class Notice(msgspec.Struct, frozen=True):
    """Something worth telling the registrant that does not reject the registration (lint, unknown context)."""

    code: str
    message: str
    field: str | None = None


# -- what a description offers


class Vendor(msgspec.Struct, frozen=True, omit_defaults=True):
    name: str | None = None
    url: str | None = None


class Capability(msgspec.Struct, frozen=True, omit_defaults=True):
    """One thing a description offers; ``version`` is the capability's own, else the description's."""

    name: str
    #: Where the capability was read from: lmos (lmos:capabilities), action (an agent's) or function (a tool's).
    source: str
    id: str | None = None
    version: str | None = None
    description: str | None = None
    examples: list[str] = []
    input: dict[str, Any] | None = None
    output: dict[str, Any] | None = None


class LintWarning(msgspec.Struct, frozen=True):
    """A tool-design guideline the description does not follow (never a rejection)."""

    code: str
    message: str
    field: str


# -- compatibility of two versions


class Change(msgspec.Struct, frozen=True):
    #: JSON Pointer into the description.
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


class CompatibilityRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Either ``id`` with ``from`` and ``to`` (two kept versions) or ``old`` and ``new`` (two documents)."""

    id: str | None = None
    from_: str | None = msgspec.field(default=None, name="from")
    to: str | None = None
    old: dict[str, Any] | None = None
    new: dict[str, Any] | None = None


class CompatibilityResult(msgspec.Struct, frozen=True):
    verdict: str
    changes: list[Change]
    required_bump: str
    from_: str | None = msgspec.field(default=None, name="from")
    to: str | None = None
    declared_bump: str | None = None
    honest: bool | None = None


# -- search and summaries


class CapabilityBrief(msgspec.Struct, frozen=True):
    name: str
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
    types: list[str] = []
    capabilities: list[CapabilityBrief] = []
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
    #: Counts over all matches, when asked for with ``facets=true``.
    facets: Facets | None = None


class ThingSummary(msgspec.Struct, frozen=True):
    id: str
    kind: str
    modified: dt.datetime
    title: str | None = None
    description: str | None = None
    languages: list[str] = []
    vendor: Vendor | None = None
    version: str | None = None
    types: list[str] = []
    capabilities: list[Capability] = []
    lint: list[LintWarning] = []
    expires: dt.datetime | None = None


# -- kept versions


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


# -- capability resolution


class Requirement(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    #: Capability id (e.g. ``urn:telekom:capability:billing:view``) or name (case-insensitive).
    capability: str
    #: npm range (``^1.2``, ``~1.2.3``, ``>=1 <2``, ``1.x``) or Ivy/Maven range (``[1.0,2.0)``).
    range: str = "*"
    strategy: Literal["highest", "lowest", "closest"] = "highest"
    #: The version ``closest`` aims at.
    closest_to: str | None = None


class ResolveRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    requirements: list[Requirement]


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
    alternatives: list[Provider] = []
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
    #: Lint and other notices of the registration (also in the ``Registry-Notices`` header).
    notices: list[Notice] = []
