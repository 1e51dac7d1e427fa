"""Discovery use cases: search, facets, summaries, versions, capability resolution, compatibility, tool formats.

The catalog they read is kept in step with writes by :mod:`registry.projections.catalog`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import uuid
from collections.abc import Callable
from typing import Any

import msgspec

from registry.auth.ownership import DerivedId
from registry.auth.principal import Principal
from registry.auth.tenancy import EVERYTHING, TenantScope
from registry.descriptions.compatibility import compare_documents
from registry.descriptions.ids import position_problem
from registry.descriptions.model import CONVENTIONS
from registry.descriptions.summary import KINDS, summarise, vendor_words, version_of
from registry.descriptions.tool_formats import (
    FORMATS,
    ToolFormatError,
    detect_format,
    export_tool,
    import_tool,
    tool_description,
    tool_functions,
)
from registry.descriptions.validation import validate
from registry.descriptions.versions import (
    precedence,
    satisfies,
    sort_key,
    version_order,
    version_problem,
)
from registry.directory.service import DirectoryService
from registry.discovery.needs import MODES, NeedSearch
from registry.discovery.resolution import (
    VENDOR_EXCLUDED,
    checked_range,
    provider_of,
    ranking_of,
    rule_of,
    unresolved,
)
from registry.discovery.text import MATCH_ANY, MATCHES, any_words_query, match_of
from registry.discovery.text import terms as query_terms
from registry.embeddings.indexer import VectorIndexer
from registry.errors import BadRequest, InvalidId, NotFound
from registry.store import catalog
from registry.store.catalog import (
    CatalogStore,
    Filters,
    Outline,
    RankedProvider,
    VersionRow,
)
from registry.wire import (
    CandidateNote,
    CapabilityBrief,
    CompatibilityRequest,
    CompatibilityResult,
    Explanation,
    Facets,
    FacetValue,
    ImportedTool,
    Notice,
    Report,
    Requirement,
    Resolution,
    ResolveRequest,
    ResolveResult,
    SearchItem,
    SearchResult,
    ThingSummary,
    Vendor,
    VersionDetail,
    VersionInfo,
    VersionList,
)

SORTS = ("relevance", "title", "modified", "expires")
#: How a vendor filter matches vendor names (registry.store.catalog.Filters.vendor_match).
VENDOR_MATCHES = ("words", "exact", "fuzzy")
NO_PROVIDER = "no_provider"
NO_VERSION_IN_RANGE = "no_version_in_range"
PROVIDER_EXPIRED = "provider_expired"
#: Why a candidate was left out (explanations).
OUT_OF_RANGE = catalog.OUT_OF_RANGE
EXPIRED = catalog.EXPIRED
#: Candidates listed in an explanation.
MAX_EXPLAINED = 50
#: Most words in a free-text query (``q``).
MAX_QUERY_TERMS = 32
#: Alternatives listed per resolved requirement.
MAX_ALTERNATIVES = 10


# -- queries


class SearchParams(msgspec.Struct, frozen=True):
    kind: str | None = None
    vendor: str | None = None
    capability: str | None = None
    capability_version: str | None = None
    type: str | None = None
    q: str | None = None
    sort: str | None = None
    limit: int = 20
    cursor: str | None = None
    facets: bool = False
    convention: str | None = None
    vendor_match: str | None = None
    #: How ``q`` matches (registry.discovery.text): all, any, or None (by its syntax).
    match: str | None = None
    #: How a need in plain words is answered (registry.discovery.needs): lexical, semantic or hybrid.
    mode: str | None = None


def _encode_cursor(sort: str, key: Any, thing_id: str) -> str:
    value = key.isoformat() if isinstance(key, dt.datetime) else key
    return base64.urlsafe_b64encode(msgspec.json.encode([sort, value, thing_id])).decode().rstrip("=")


def _decode_cursor(cursor: str, sort: str) -> tuple[Any, str]:
    invalid = BadRequest(
        "The cursor is not one this search returned (cursors are only valid with the same sort)",
        invalidParams=[{"name": "cursor", "reason": "not a cursor of this search"}],
    )
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        cursor_sort, key, thing_id = msgspec.json.decode(raw)
    except (binascii.Error, ValueError, TypeError, msgspec.DecodeError) as error:
        raise invalid from error
    if cursor_sort != sort or not isinstance(thing_id, str):
        raise invalid
    key = _cursor_key(key, sort, invalid)
    if position_problem(thing_id) or (isinstance(key, str) and position_problem(key)):
        raise invalid
    return key, thing_id


def _cursor_key(key: Any, sort: str, invalid: BadRequest) -> Any:
    """A cursor's sort key as ``sort`` compares it: a time for modified and expires, a number for relevance, a
    text for title; ``invalid`` raised for any other."""
    if sort in {"modified", "expires"}:
        try:
            return dt.datetime.fromisoformat(key)
        except (TypeError, ValueError) as error:
            raise invalid from error
    if not isinstance(key, float | int if sort == "relevance" else str):
        raise invalid
    return key


def _check_choice(name: str, value: str | None, choices: tuple[str, ...]) -> None:
    """400 unless ``value`` (None: not given) is one of ``choices``."""
    if value is not None and value not in choices:
        raise BadRequest(
            f"{name} must be one of {', '.join(choices)}, got {value!r}",
            invalidParams=[{"name": name, "reason": f"one of {', '.join(choices)}"}],
        )


def _capability_accepts(params: SearchParams) -> Callable[[str], bool] | None:
    """Which versions of ``capability`` match, when ``capability_version`` constrains them (None: any)."""
    if params.capability_version is None:
        return None
    if params.capability is None:
        raise BadRequest(
            "capability_version needs capability (the capability whose version is constrained)",
            invalidParams=[{"name": "capability_version", "reason": "requires capability"}],
        )
    version_range = checked_range(params.capability_version, "capability_version")
    return functools.partial(satisfies, version_range=version_range)


def _check_vendor(vendor: str | None) -> None:
    """400 for a vendor filter without a word to match."""
    if vendor is not None and not vendor_words(vendor):
        raise BadRequest(
            "vendor must contain a word (letters or digits)",
            invalidParams=[{"name": "vendor", "reason": "no word in it"}],
        )


def _check_terms(text: str | None) -> None:
    """400 for a free text of more than ``MAX_QUERY_TERMS`` terms."""
    if text and len(query_terms(text)) > MAX_QUERY_TERMS:
        # Each term is one more full-text condition over every description (docs/performance.md).
        raise BadRequest(
            f"q has {len(query_terms(text))} terms; at most {MAX_QUERY_TERMS} are accepted (or not counted)",
            invalidParams=[{"name": "q", "reason": f"at most {MAX_QUERY_TERMS} terms"}],
        )


def _sort_of(params: SearchParams, filters: Filters) -> str:
    """The sort asked for, by default relevance for a text search and title otherwise (relevance needs a text)."""
    sort = params.sort or ("relevance" if filters.text else "title")
    return "title" if sort == "relevance" and filters.text is None else sort


def _resolved(
    requirement: Requirement, considered: int, chosen: list[RankedProvider], notes: list[CandidateNote]
) -> Resolution:
    """The resolution to the first of ``chosen``, the next ones its alternatives, the ones left out noted."""
    first, *others = chosen
    ordered = [
        CandidateNote(
            provider.offer.thing_id,
            provider.offer.version,
            "chosen" if index == 0 else "alternative",
            provider.vendor_name,
        )
        for index, provider in enumerate(chosen)
    ]
    return Resolution(
        capability=requirement.capability,
        range=requirement.range,
        strategy=requirement.strategy,
        resolved=True,
        provider=provider_of(first),
        alternatives=[provider_of(provider) for provider in others[:MAX_ALTERNATIVES]],
        explanation=Explanation(considered=considered, candidates=ordered + notes, rule=rule_of(requirement)),
    )


def _why_unresolved(requirement: Requirement, outline: Outline) -> tuple[str, str]:
    """The reason and detail of a requirement no provider meets, from what the providers offer (``outline``)."""
    wanted = requirement.capability
    if outline.any_live_in_range:
        return VENDOR_EXCLUDED, (
            f"every live provider of {wanted!r} in range {requirement.range!r} is of a vendor "
            "the vendor preferences leave out"
        )
    if outline.any_in_range or not outline.any_live:
        scope = f" in range {requirement.range!r}" if outline.any_in_range else ""
        return PROVIDER_EXPIRED, f"every provider of {wanted!r}{scope} has expired"
    offered = sorted(outline.live_versions, key=version_order)
    return NO_VERSION_IN_RANGE, (
        f"{wanted!r} is offered in versions {', '.join(offered) or '(none)'}, none in {requirement.range!r}"
    )


def _search_item(
    thing_id: str, summary: dict[str, Any], modified: dt.datetime, expires: dt.datetime | None, key: Any, sort: str
) -> SearchItem:
    return SearchItem(
        id=thing_id,
        kind=summary["kind"],
        modified=modified,
        title=summary.get("title"),
        description=summary.get("description"),
        vendor=msgspec.convert(summary["vendor"], Vendor) if summary.get("vendor") else None,
        version=summary.get("version"),
        types=summary.get("types", []),
        capabilities=_brief(summary),
        expires=expires,
        score=key if sort == "relevance" else None,
        convention=summary.get("convention"),
    )


def _brief(summary: dict[str, Any]) -> list[CapabilityBrief]:
    return [
        CapabilityBrief(name=item["name"], source=item["source"], id=item.get("id"), version=item.get("version"))
        for item in summary.get("capabilities", [])
    ]


class DiscoveryService:
    def __init__(
        self, catalog: CatalogStore, directory: DirectoryService, vectors: VectorIndexer | None = None
    ) -> None:
        self.catalog = catalog
        self.directory = directory
        self.needs = NeedSearch(catalog, vectors)

    @staticmethod
    def filters(params: SearchParams, readers: TenantScope = EVERYTHING) -> Filters:
        _check_choice("kind", params.kind, KINDS)
        _check_choice("convention", params.convention, CONVENTIONS)
        accepts = _capability_accepts(params)
        text = params.q.strip() if params.q is not None else None
        vendor_match = params.vendor_match or "words"
        _check_choice("vendor_match", vendor_match, VENDOR_MATCHES)
        _check_vendor(params.vendor)
        _check_terms(text)
        _check_choice("match", params.match, MATCHES)
        return Filters(
            kind=params.kind,
            vendor=params.vendor,
            vendor_match=vendor_match,
            capability=params.capability,
            capability_accepts=accepts,
            type=params.type,
            text=text or None,
            text_match=match_of(text or "", params.match),
            text_query=any_words_query(text or ""),
            convention=params.convention,
            readers=readers,
        )

    async def search(self, params: SearchParams, max_page_size: int, readers: TenantScope = EVERYTHING) -> SearchResult:
        """One page of ``GET /api/v1/search``: a need in plain words (``q`` ranked by relevance, any of its words)
        is answered by :class:`NeedSearch` in one page; every other search is a keyset page of the catalog
        (:meth:`CatalogStore.search`) with a ``next_cursor``."""
        _check_choice("sort", params.sort, SORTS)
        filters = self.filters(params, readers)
        sort = _sort_of(params, filters)
        _check_choice("mode", params.mode, MODES)
        if sort == "relevance" and filters.text_match == MATCH_ANY:
            return await self._need(params, filters, min(params.limit, max_page_size))
        after = None if params.cursor is None else _decode_cursor(params.cursor, sort)
        page = await self.catalog.search(filters, sort, min(params.limit, max_page_size), after)
        items = [
            _search_item(row["thing_id"], row["summary"], row["modified"], row["expires"], row["sort_key"], sort)
            for row in page.rows
        ]
        next_cursor = None if page.last is None else _encode_cursor(sort, *page.last)
        facets = await self._facets(filters) if params.facets else None
        return SearchResult(items=items, next_cursor=next_cursor, facets=facets)

    async def _need(self, params: SearchParams, filters: Filters, limit: int) -> SearchResult:
        """A need in plain words: one page of the best answers (registry/discovery/needs.py)."""
        if params.cursor is not None:
            raise BadRequest(
                "A need in plain words is answered in one page (up to limit); cursors page through match=all or "
                "another sort",
                invalidParams=[{"name": "cursor", "reason": "not with a need in plain words"}],
            )
        answer = await self.needs.search(filters, params.mode, limit)
        facets = await self._facets(filters) if params.facets else None
        return SearchResult(
            items=answer.items,
            next_cursor=None,
            facets=facets,
            retrieval=answer.retrieval,
            retrieval_note=answer.note,
        )

    async def facets(self, params: SearchParams, readers: TenantScope = EVERYTHING) -> Facets:
        return await self._facets(self.filters(params, readers))

    async def _facets(self, filters: Filters) -> Facets:
        counted = await self.catalog.facets(filters)
        return Facets(
            **{name: [FacetValue(value, count) for value, count in values] for name, values in counted.items()}
        )

    async def summary(self, thing_id: str) -> ThingSummary:
        found = await self.catalog.summary(thing_id)
        if found is None:
            raise NotFound(f"No Thing Description with id {thing_id!r}")
        summary, modified, expires = found
        return msgspec.convert({**summary, "id": thing_id, "modified": modified, "expires": expires}, ThingSummary)

    # -- versions

    async def _current_version(self, thing_id: str, readers: TenantScope = EVERYTHING) -> tuple[str | None, str | None]:
        """The version of the description served now and its document (JSON), if ``readers`` may see it."""
        stored = await self.directory.things.get(thing_id)
        if stored is None or not readers.sees(stored.tenant):
            return None, None
        found = await self.catalog.summary(thing_id)
        version = None if found is None else found[0].get("version")
        return (None, None) if version is None else (version, stored.document_text)

    async def versions(
        self, thing_id: str, satisfying: str | None = None, readers: TenantScope = EVERYTHING
    ) -> VersionList:
        """The kept versions ``readers`` may see; none (404) is the answer for another tenant's as for a missing id."""
        version_range = None if satisfying is None else checked_range(satisfying, "satisfies")
        rows = await self.catalog.versions(thing_id, readers)
        if not rows:
            raise NotFound(f"No versions are kept for id {thing_id!r}")
        if version_range is not None:
            rows = [row for row in rows if satisfies(row.version, version_range)]
        current = await self._current_version(thing_id, readers)
        rows.sort(key=_version_order, reverse=True)
        return VersionList(id=thing_id, items=[_version_info(row, *current) for row in rows])

    async def version(self, thing_id: str, version: str, readers: TenantScope = EVERYTHING) -> VersionDetail:
        row = await self.catalog.version(thing_id, version, readers)
        if row is None:
            raise NotFound(f"No version {version!r} is kept for id {thing_id!r}")
        changed = _content_changed(row, *await self._current_version(thing_id, readers))
        return VersionDetail(
            id=thing_id,
            version=row.version,
            registered=row.registered,
            revision=row.revision,
            current=changed is False,
            content_changed=bool(changed),
            document=msgspec.json.decode(row.document_text),
            previous_version=row.previous_version,
            registered_by=row.registered_by,
            compatibility=None if row.compatibility is None else msgspec.convert(row.compatibility, Report),
        )

    # -- resolution

    async def resolve(self, request: ResolveRequest, readers: TenantScope = EVERYTHING) -> ResolveResult:
        if not request.requirements:
            raise BadRequest("requirements must list at least one requirement")
        ranges = []
        for index, requirement in enumerate(request.requirements):
            ranges.append(checked_range(requirement.range, f"requirements[{index}].range"))
            if requirement.strategy == "closest" and (
                requirement.closest_to is None or sort_key(requirement.closest_to) is None
            ):
                raise BadRequest(
                    "strategy closest needs closest_to, a version such as 1.4.0",
                    invalidParams=[{"name": f"requirements[{index}].closest_to", "reason": "a semantic version"}],
                )
        results = [
            await self._resolve_one(requirement, version_range, readers)
            for requirement, version_range in zip(request.requirements, ranges, strict=True)
        ]
        return ResolveResult(resolved=all(result.resolved for result in results), results=results)

    async def _resolve_one(self, requirement: Requirement, version_range: str, readers: TenantScope) -> Resolution:
        """Versions and vendor names are ranked here (a few distinct values), the providers in SQL, of which only
        the explained page is loaded."""
        wanted = requirement.capability
        considered, versions = await self.catalog.offered_versions(wanted, readers)
        if not considered:
            return unresolved(requirement, NO_PROVIDER, f"no description offers capability {wanted!r}", 0, [])
        vendors: list[str] = []
        if requirement.include_vendors or requirement.exclude_vendors or requirement.prefer_vendors:
            vendors = await self.catalog.offered_vendors(wanted, readers)
        ranking = ranking_of(requirement, version_range, versions, vendors)
        chosen = await self.catalog.ranked_providers(ranking, MAX_EXPLAINED, readers)
        left_out = []
        if len(chosen) < MAX_EXPLAINED:
            left_out = await self.catalog.left_out(ranking, MAX_EXPLAINED - len(chosen), readers)
        notes = [
            CandidateNote(item.thing_id, item.version, "excluded", item.vendor_name, item.reason) for item in left_out
        ]
        if chosen:
            return _resolved(requirement, considered, chosen, notes)
        reason, detail = _why_unresolved(requirement, await self.catalog.outline(ranking, readers))
        return unresolved(requirement, reason, detail, considered, notes)

    # -- compatibility

    async def compatibility(
        self, request: CompatibilityRequest, readers: TenantScope = EVERYTHING
    ) -> CompatibilityResult:
        """Two documents, or two kept versions of an id that ``readers`` may see (another tenant's, or a deleted
        one's they could not see, answer as missing ones do)."""
        if request.old is not None or request.new is not None:
            if request.old is None or request.new is None or request.id is not None:
                raise BadRequest("Compare two documents with old and new (and neither id, from nor to)")
            _require_descriptions(request.old, request.new)
            report = compare_documents(request.old, request.new)
            old_version, new_version = version_of(request.old), version_of(request.new)
        else:
            if request.id is None or request.from_ is None or request.to is None:
                raise BadRequest("Compare two kept versions with id, from and to, or two documents with old and new")
            old = await self.version(request.id, request.from_, readers)
            new = await self.version(request.id, request.to, readers)
            report = compare_documents(old.document, new.document, old.version, new.version)
            old_version, new_version = old.version, new.version
        return CompatibilityResult(
            verdict=report.verdict,
            changes=report.changes,
            required_bump=report.required_bump,
            from_=old_version,
            to=new_version,
            declared_bump=report.declared_bump,
            honest=report.honest,
        )

    # -- tool formats

    async def import_tool(
        self,
        tool_format: str | None,
        body: Any,
        *,
        thing_id: str | None,
        vendor: str | None,
        version: str | None,
        href: str | None,
        principal: Principal | None = None,
    ) -> ImportedTool:
        """Store a tool as an ``lmos:Tool``; without ``id`` the id is derived from vendor and name (re-import
        replaces)."""
        if thing_id is not None:
            InvalidId.check(thing_id, parameter="id")
        version_refused = None if version is None else version_problem(version)
        if version_refused is not None:
            raise BadRequest(
                f"The query parameter version is out of bounds: {version_refused}",
                invalidParams=[{"name": "version", "reason": version_refused}],
            )
        notices = []
        if tool_format is None:
            tool_format = detect_format(body)
            if tool_format is None:
                raise BadRequest(
                    f"The tool's format cannot be told from its members; name it with format=({', '.join(FORMATS)})",
                    invalidParams=[{"name": "format", "reason": "required when the format cannot be detected"}],
                )
            notices.append(Notice("tool-format-detected", f"the body was read as a {tool_format} tool", "format"))
        try:
            function = import_tool(tool_format, body)
        except ToolFormatError as error:
            raise BadRequest(
                f"Not a {tool_format} tool: {error}",
                validationErrors=[{"field": error.field, "description": str(error)}],
            ) from error
        derived = None
        if thing_id is None:
            # The vendor's id for the tool: a party bound to the vendor holds it (registry/auth/ownership.py).
            seed = f"lmos-tool:{vendor or ''}:{function.name}"
            thing_id = f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, seed)}"
            derived = DerivedId(vendor=vendor or None)
        document = tool_description(function, thing_id, vendor=vendor, version=version, href=href)
        outcome = await self.directory.put(
            thing_id, document, principal=principal, derived=derived, assigned_id=derived is not None
        )
        return ImportedTool(
            id=thing_id, location=f"/things/{thing_id}", created=outcome.created, notices=notices + outcome.notices
        )

    async def export(self, thing_id: str, tool_format: str) -> Any:
        """A tool (one function) as one object; an agent, or a tool with several functions, as a list."""
        stored = await self.directory.get(thing_id)
        document = stored.document()
        functions = tool_functions(document)
        try:
            exported = [export_tool(tool_format, function) for function in functions]
        except ToolFormatError as error:
            raise BadRequest(str(error), invalidParams=[{"name": "format", "reason": str(error)}]) from error
        if summarise(document).kind == "tool" and len(exported) == 1:
            return exported[0]
        return exported


def _require_descriptions(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Only Thing Descriptions can be compared: anything else would be answered with a meaningless verdict."""
    errors = [
        {"field": f"{side}.{error.field}", "description": error.description}
        for side, document in (("old", old), ("new", new))
        for error in validate(document)
    ]
    if errors:
        sides = sorted({error["field"].split(".", 1)[0] for error in errors})
        raise BadRequest(
            f"{' and '.join(sides)} {'is not a' if len(sides) == 1 else 'are not'} valid Thing "
            f"Description{'' if len(sides) == 1 else 's'}; see validationErrors",
            validationErrors=errors,
        )


def _version_order(row: VersionRow) -> tuple[Any, ...]:
    """Semantic versions in precedence order, above texts that are none (those in registration order)."""
    if sort_key(row.version) is None:
        return (0, (), row.revision)
    return (1, precedence(row.version), 0)


def _content_changed(row: VersionRow, current: str | None, served: str | None) -> bool | None:
    """None when ``row`` is not the served version; else whether the served document differs from the kept one."""
    if row.version != current or served is None:
        return None
    return served != row.document_text and msgspec.json.decode(served) != msgspec.json.decode(row.document_text)


def _version_info(row: VersionRow, current: str | None, served: str | None) -> VersionInfo:
    compatibility = row.compatibility or {}
    changed = _content_changed(row, current, served)
    return VersionInfo(
        version=row.version,
        registered=row.registered,
        revision=row.revision,
        current=changed is False,
        content_changed=bool(changed),
        previous_version=row.previous_version,
        verdict=compatibility.get("verdict"),
        honest=compatibility.get("honest"),
        registered_by=row.registered_by,
    )
