"""Wire types of the directory's JSON APIs, shared by the server and the SDK.

Plain msgspec Structs with no dependency beyond msgspec, so ``registry.client`` can import them without the server
stack. On the server they are the response models Litestar documents in the OpenAPI schema; in the SDK they are
the typed results.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

import msgspec


class Notice(msgspec.Struct, frozen=True):
    """Something worth telling the registrant that does not reject the registration (lint, unknown context)."""

    code: str
    message: str
    field: str | None = None


# -- problems (RFC 7807): every 4xx and 5xx


class ValidationIssue(msgspec.Struct, frozen=True):
    """One problem of an invalid description (``validationErrors`` of the problem)."""

    field: str
    description: str


class InvalidParam(msgspec.Struct, frozen=True):
    """One rejected request parameter (``invalidParams`` of the problem)."""

    name: str
    reason: str


class Problem(msgspec.Struct, frozen=True, omit_defaults=True):
    """An RFC 7807 problem detail, as every error answer of the directory is (``application/problem+json``)."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    validationErrors: list[ValidationIssue] | None = None
    invalidParams: list[InvalidParam] | None = None


class WriteNotices(msgspec.Struct, frozen=True):
    """The body of a write whose notices did not all fit in the ``Registry-Notices`` header."""

    notices: list[Notice]


#: Descriptions per ``POST /api/v1/things/batch``: enough that a request's fixed costs vanish, few enough that one
#: transaction holds its locks briefly.
MAX_BATCH = 1000


class BatchItem(msgspec.Struct, frozen=True, omit_defaults=True):
    """One description of a batch, in its place: written (``status`` 201 created, 200 replaced, with its entity
    tag and notices) or refused (``problem``: what a PUT of it alone would have answered)."""

    status: int
    id: str | None = None
    etag: str | None = None
    notices: list[Notice] = []
    problem: Problem | None = None


class BatchResult(msgspec.Struct, frozen=True):
    """The outcome of ``POST /api/v1/things/batch``: written and refused counts, and each description's item."""

    written: int
    refused: int
    results: list[BatchItem]


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
    #: Keywords the publisher gave it (an A2A skill's ``tags``).
    tags: list[str] = []
    input: dict[str, Any] | None = None
    output: dict[str, Any] | None = None


class LintWarning(msgspec.Struct, frozen=True):
    """A tool-design guideline the description does not follow (never a rejection)."""

    code: str
    message: str
    field: str


# -- quality of what is registered (the dashboard's quality view)


class LintedDescription(msgspec.Struct, frozen=True):
    id: str
    title: str | None
    kind: str
    warnings: list[LintWarning]


class QuestionableBump(msgspec.Struct, frozen=True):
    """A kept version that broke compatibility with the one before, or whose version number misstates the change."""

    id: str
    title: str | None
    version: str
    previous_version: str | None
    verdict: str | None
    honest: bool | None
    registered: dt.datetime


class QualityReport(msgspec.Struct, frozen=True):
    lint: list[LintedDescription]
    bumps: list[QuestionableBump]
    #: How many descriptions have lint warnings, and how many kept versions are questionable: all of them, where
    #: the lists hold at most ``limit``.
    lint_total: int = 0
    bumps_total: int = 0


class RecentChange(msgspec.Struct, frozen=True):
    """An entry of the change log: ``seq`` is the event id ``/events`` sends for it."""

    seq: int
    type: str
    id: str
    at: dt.datetime
    actor: str | None = None
    #: Owners before and after, for a ``thing_transferred`` change.
    transferred_from: str | None = None
    transferred_to: str | None = None
    #: Why a ``thing_deleted`` description went: ``expired`` when its lease ran out and the purge removed it; none
    #: for a delete (its ``actor`` made it).
    reason: str | None = None
    #: What an update changed, with ``?id=``: JSON Pointers of the members its merge patch set or removed, two
    #: levels deep (at most 50).
    changed: list[str] | None = None


class RecentChanges(msgspec.Struct, frozen=True):
    items: list[RecentChange]


# -- compatibility of two versions


class Change(msgspec.Struct, frozen=True):
    #: RFC 6901 JSON Pointer into the document named by ``document``.
    pointer: str
    #: The rule that classified the change (the table in docs/discovery.md).
    kind: str
    breaking: bool
    message: str
    #: The bump this change needs on its own: major, minor or patch.
    bump: str
    #: The document ``pointer`` points into: ``old`` for what was removed, ``new`` otherwise.
    document: str = "new"


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


class MatchedCapability(msgspec.Struct, frozen=True):
    """A capability, action or skill of a hit that matches the need: what an agent calls."""

    name: str
    #: Where it was read from: lmos (lmos:capabilities, an A2A skill, an MCP server), action or function.
    source: str
    id: str | None = None
    #: Cosine similarity of its vector to the need's (None when matched by its words alone).
    similarity: float | None = None


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
    #: Relevance when sorted by relevance, 0..1 and comparable across queries for a need in plain words.
    score: float | None = None
    #: lmos, a2a or mcp: the convention the description was published in (None for plain things).
    convention: str | None = None
    #: For a need in plain words: strong (the score reaches the documented threshold) or weak.
    match: str | None = None
    #: For a need in plain words: the capabilities, actions or skills that match it, the best first.
    matched: list[MatchedCapability] = []


class FacetValue(msgspec.Struct, frozen=True):
    value: str
    count: int


class Facets(msgspec.Struct, frozen=True):
    kind: list[FacetValue]
    vendor: list[FacetValue]
    capability: list[FacetValue]
    #: lmos, a2a or mcp.
    convention: list[FacetValue] = []


class SearchResult(msgspec.Struct, frozen=True):
    items: list[SearchItem]
    #: Pass as ``cursor`` for the next page; None on the last page.
    next_cursor: str | None
    #: Counts over all matches, when asked for with ``facets=true``.
    facets: Facets | None = None
    #: For a need in plain words: how it was answered (lexical, semantic or hybrid).
    retrieval: str | None = None
    #: Why the answer is lexical when another retrieval was asked for or is the default (no pgvector, ...).
    retrieval_note: str | None = None


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
    convention: str | None = None


# -- kept versions


class VersionInfo(msgspec.Struct, frozen=True):
    version: str
    registered: dt.datetime
    revision: int
    #: True for the version the current description has, when it is the kept document.
    current: bool
    previous_version: str | None = None
    #: Compatibility with ``previous_version``: identical, compatible or breaking.
    verdict: str | None = None
    honest: bool | None = None
    #: Name of the principal that registered it (with authentication on).
    registered_by: str | None = None
    #: True when the description now served under this version differs from the kept (first) registration.
    content_changed: bool = False


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
    registered_by: str | None = None
    compatibility: Report | None = None
    #: True when the description now served under this version differs from this kept document.
    content_changed: bool = False


# -- capability resolution


class Requirement(msgspec.Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True):
    #: Capability id (e.g. ``urn:telekom:capability:billing:view``) or name (case-insensitive).
    capability: str
    #: npm range (``^1.2``, ``~1.2.3``, ``>=1 <2``, ``1.x``) or Ivy/Maven range (``[1.0,2.0)``).
    range: str = "*"
    strategy: Literal["highest", "lowest", "closest"] = "highest"
    #: The version ``closest`` aims at.
    closest_to: str | None = None
    #: Only providers of these vendors (matched like search's ``vendor``: words or word prefixes, any case).
    include_vendors: list[str] = []
    #: Never providers of these vendors.
    exclude_vendors: list[str] = []
    #: Providers of these vendors first (in this order), then the others; the strategy orders within each.
    prefer_vendors: list[str] = []


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


class CandidateNote(msgspec.Struct, frozen=True, omit_defaults=True):
    """One description that offers the capability, and what became of it."""

    id: str
    version: str | None
    #: chosen, alternative or excluded.
    status: str
    vendor: str | None = None
    #: Why it was excluded: out_of_range, expired, vendor_excluded or vendor_not_included.
    reason: str | None = None


class Explanation(msgspec.Struct, frozen=True):
    #: Descriptions that offer the capability.
    considered: int
    #: The first of them (chosen, alternatives, then excluded), with what became of each.
    candidates: list[CandidateNote]
    #: The rule that picked the winner (or why none could be picked).
    rule: str


class Resolution(msgspec.Struct, frozen=True):
    capability: str
    range: str
    strategy: str
    resolved: bool
    provider: Provider | None = None
    alternatives: list[Provider] = []
    #: Why it is unresolved: no_provider, no_version_in_range, provider_expired or vendor_excluded.
    reason: str | None = None
    detail: str | None = None
    explanation: Explanation | None = None


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


# -- ownership


class Ownership(msgspec.Struct, frozen=True, omit_defaults=True):
    """Who may change a description: its owner identity, ``key:<owner name>`` (API keys) or
    ``jwt:<issuer>|<owner claim>`` (access tokens; ``|`` and ``%`` of the issuer percent-encoded), None when it
    was registered with authentication off; and its tenant (the owner holds it in that tenant)."""

    id: str
    owner: str | None
    tenant: str | None = None


class OwnerTransfer(msgspec.Struct, frozen=True):
    """The new owner, named with its origin as ``/owner`` shows it: ``key:<owner name>`` or
    ``jwt:<issuer>|<owner claim>`` (tokens of this directory's issuer)."""

    owner: str


# -- other conventions: A2A Agent Cards and the MCP Registry API (registry.conventions)


class CardSignature(msgspec.Struct, frozen=True, omit_defaults=True):
    """One JWS signature of an imported Agent Card, as its protected header names it."""

    kid: str | None = None
    alg: str | None = None
    jku: str | None = None


class SignatureReport(msgspec.Struct, frozen=True):
    """The card's signatures; ``verified`` is None when no trusted key could check them
    (REGISTRY_A2A_TRUSTED_KEYS), else whether one of them verifies."""

    count: int
    signatures: list[CardSignature]
    verified: bool | None = None
    detail: str | None = None


class ImportedAgent(msgspec.Struct, frozen=True):
    id: str
    #: Where the stored description is, relative to the directory (``/things/{id}``).
    location: str
    #: Where A2A clients resolve the card (base URL for the SDK's card resolver).
    card_base: str
    created: bool
    signatures: SignatureReport
    notices: list[Notice] = []


class McpServerResponse(msgspec.Struct, frozen=True):
    """A published ``server.json`` and the registry-managed ``_meta`` (MCP Registry API ``ServerResponse``)."""

    server: dict[str, Any]
    meta: dict[str, Any] = msgspec.field(name="_meta")


class McpListMetadata(msgspec.Struct, frozen=True, omit_defaults=True):
    count: int
    #: Pass as ``cursor`` for the next page; absent on the last page.
    nextCursor: str | None = None


class McpServerList(msgspec.Struct, frozen=True):
    servers: list[McpServerResponse]
    metadata: McpListMetadata


class McpStatusUpdate(msgspec.Struct, frozen=True):
    status: Literal["active", "deprecated", "deleted"]
    statusMessage: Annotated[str, msgspec.Meta(max_length=500)] | None = None


class McpAllVersionsStatus(msgspec.Struct, frozen=True):
    updatedCount: int
    servers: list[McpServerResponse]


# -- API keys (admin)


class NewApiKey(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``POST /api/v1/keys``: a key as ``registry keys create`` makes it."""

    #: Unique; who made a change in the change log (``key:<name>``).
    name: str
    #: Among read, write, admin (each includes the ones before it).
    scopes: list[str] = msgspec.field(default_factory=lambda: ["read"])
    #: Owner name of the descriptions it creates, owned as ``key:<owner>`` (default: the key's name).
    owner: str | None = None
    #: Id patterns it may register (``urn:acme:*``); none = any id.
    namespaces: list[str] = []
    #: ``lmos:vendor`` names it may register for; none = any vendor.
    vendors: list[str] = []
    tenant: str | None = None
    #: A lifetime (``30d``, ``12h``, ``90m``, ``45s``) or an ISO 8601 time; absent = never expires.
    expires: str | None = None


class ApiKey(msgspec.Struct, frozen=True):
    """A key as an admin sees it: never its secret or the secret's hash."""

    id: str
    name: str
    scopes: list[str]
    owner: str
    #: What the descriptions it creates are owned by, as ``/owner`` shows it and a transfer names it.
    ownerIdentity: str
    namespaces: list[str]
    vendors: list[str]
    tenant: str | None
    created: dt.datetime
    expires: dt.datetime | None
    revoked: dt.datetime | None
    lastUsed: dt.datetime | None
    #: active, revoked or expired.
    state: str


class CreatedApiKey(ApiKey, frozen=True):
    """The answer of a create: the key with its secret, shown this once (only a hash is stored)."""

    secret: str


class ApiKeyList(msgspec.Struct, frozen=True):
    items: list[ApiKey]
