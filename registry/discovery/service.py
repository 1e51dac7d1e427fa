"""Discovery use cases: search, facets, summaries, versions, capability resolution, compatibility, tool formats.

The catalog they read is kept in step with writes by :mod:`registry.projections.catalog`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import uuid
from typing import Any

import msgspec

from registry.descriptions.compatibility import compare_documents
from registry.descriptions.summary import KINDS, summarise
from registry.descriptions.tool_formats import (
    ToolFormatError,
    export_tool,
    import_tool,
    tool_description,
    tool_functions,
)
from registry.descriptions.versions import RangeError, distance, parse_range, precedence, satisfies, sort_key
from registry.directory.service import DirectoryService
from registry.errors import BadRequest, NotFound
from registry.store.catalog import (
    CatalogStore,
    Filters,
    Offer,
    ProviderDetails,
    VersionRow,
)
from registry.wire import (
    CapabilityBrief,
    CompatibilityRequest,
    CompatibilityResult,
    Facets,
    FacetValue,
    ImportedTool,
    Provider,
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

SORTS = ("relevance", "title", "modified")
NO_PROVIDER = "no_provider"
NO_VERSION_IN_RANGE = "no_version_in_range"
PROVIDER_EXPIRED = "provider_expired"
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
    if sort == "modified":
        try:
            key = dt.datetime.fromisoformat(key)
        except (TypeError, ValueError) as error:
            raise invalid from error
    elif not isinstance(key, float | int if sort == "relevance" else str):
        raise invalid
    return key, thing_id


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
    )


def _brief(summary: dict[str, Any]) -> list[CapabilityBrief]:
    return [
        CapabilityBrief(name=item["name"], source=item["source"], id=item.get("id"), version=item.get("version"))
        for item in summary.get("capabilities", [])
    ]


class DiscoveryService:
    def __init__(self, catalog: CatalogStore, directory: DirectoryService) -> None:
        self.catalog = catalog
        self.directory = directory

    @staticmethod
    def filters(params: SearchParams) -> Filters:
        if params.kind is not None and params.kind not in KINDS:
            raise BadRequest(
                f"kind must be one of {', '.join(KINDS)}, got {params.kind!r}",
                invalidParams=[{"name": "kind", "reason": f"one of {', '.join(KINDS)}"}],
            )
        accepts = None
        if params.capability_version is not None:
            if params.capability is None:
                raise BadRequest(
                    "capability_version needs capability (the capability whose version is constrained)",
                    invalidParams=[{"name": "capability_version", "reason": "requires capability"}],
                )
            version_range = _range(params.capability_version, "capability_version")
            accepts = functools.partial(satisfies, version_range=version_range)
        text = params.q.strip() if params.q is not None else None
        return Filters(
            kind=params.kind,
            vendor=params.vendor,
            capability=params.capability,
            capability_accepts=accepts,
            type=params.type,
            text=text or None,
        )

    async def search(self, params: SearchParams, max_page_size: int) -> SearchResult:
        if params.sort is not None and params.sort not in SORTS:
            raise BadRequest(
                f"sort must be one of {', '.join(SORTS)}, got {params.sort!r}",
                invalidParams=[{"name": "sort", "reason": f"one of {', '.join(SORTS)}"}],
            )
        filters = self.filters(params)
        sort = params.sort or ("relevance" if filters.text else "title")
        if sort == "relevance" and filters.text is None:
            sort = "title"
        after = None if params.cursor is None else _decode_cursor(params.cursor, sort)
        page = await self.catalog.search(filters, sort, min(params.limit, max_page_size), after)
        items = [
            _search_item(row["thing_id"], row["summary"], row["modified"], row["expires"], row["sort_key"], sort)
            for row in page.rows
        ]
        next_cursor = None if page.last is None else _encode_cursor(sort, *page.last)
        facets = await self._facets(filters) if params.facets else None
        return SearchResult(items=items, next_cursor=next_cursor, facets=facets)

    async def facets(self, params: SearchParams) -> Facets:
        return await self._facets(self.filters(params))

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

    async def _current_version(self, thing_id: str) -> str | None:
        found = await self.catalog.summary(thing_id)
        return None if found is None else found[0].get("version")

    async def versions(self, thing_id: str, satisfying: str | None = None) -> VersionList:
        version_range = None if satisfying is None else _range(satisfying, "satisfies")
        rows = await self.catalog.versions(thing_id)
        if not rows:
            raise NotFound(f"No versions are kept for id {thing_id!r}")
        if version_range is not None:
            rows = [row for row in rows if satisfies(row.version, version_range)]
        current = await self._current_version(thing_id)
        rows.sort(key=_version_order, reverse=True)
        return VersionList(id=thing_id, items=[_version_info(row, current) for row in rows])

    async def version(self, thing_id: str, version: str) -> VersionDetail:
        row = await self.catalog.version(thing_id, version)
        if row is None:
            raise NotFound(f"No version {version!r} is kept for id {thing_id!r}")
        return VersionDetail(
            id=thing_id,
            version=row.version,
            registered=row.registered,
            revision=row.revision,
            current=row.version == await self._current_version(thing_id),
            document=msgspec.json.decode(row.document_text),
            previous_version=row.previous_version,
            compatibility=None if row.compatibility is None else msgspec.convert(row.compatibility, Report),
        )

    # -- resolution

    async def resolve(self, request: ResolveRequest) -> ResolveResult:
        if not request.requirements:
            raise BadRequest("requirements must list at least one requirement")
        ranges = []
        for index, requirement in enumerate(request.requirements):
            ranges.append(_range(requirement.range, f"requirements[{index}].range"))
            if requirement.strategy == "closest" and (
                requirement.closest_to is None or sort_key(requirement.closest_to) is None
            ):
                raise BadRequest(
                    "strategy closest needs closest_to, a version such as 1.4.0",
                    invalidParams=[{"name": f"requirements[{index}].closest_to", "reason": "a semantic version"}],
                )
        pairs = list(zip(request.requirements, ranges, strict=True))
        matched: list[tuple[list[Offer], list[Offer]]] = []

        def worth_detailing(offers: list[Offer]) -> set[str]:
            """Providers in range; all providers of a requirement none is in range for (to say why)."""
            by_key: dict[str, list[Offer]] = {}
            for offer in offers:
                if offer.capability_id is not None:
                    by_key.setdefault(offer.capability_id, []).append(offer)
                by_key.setdefault(offer.name.lower(), []).append(offer)
            wanted: set[str] = set()
            for requirement, version_range in pairs:
                candidates = list(
                    dict.fromkeys(offer for key in _keys(requirement.capability) for offer in by_key.get(key, []))
                )
                in_range = [offer for offer in candidates if _offer_in_range(offer, version_range)]
                matched.append((candidates, in_range))
                wanted.update(offer.thing_id for offer in (in_range or candidates))
            return wanted

        _, details = await self.catalog.providers(
            [requirement.capability for requirement in request.requirements], worth_detailing
        )
        results = [
            _resolve_one(requirement, candidates, in_range, details)
            for requirement, (candidates, in_range) in zip(request.requirements, matched, strict=True)
        ]
        return ResolveResult(resolved=all(result.resolved for result in results), results=results)

    # -- compatibility

    async def compatibility(self, request: CompatibilityRequest) -> CompatibilityResult:
        if request.old is not None or request.new is not None:
            if request.old is None or request.new is None or request.id is not None:
                raise BadRequest("Compare two documents with old and new (and neither id, from nor to)")
            report = compare_documents(request.old, request.new)
            old_version, new_version = summarise(request.old).version, summarise(request.new).version
        else:
            if request.id is None or request.from_ is None or request.to is None:
                raise BadRequest("Compare two kept versions with id, from and to, or two documents with old and new")
            old = await self.version(request.id, request.from_)
            new = await self.version(request.id, request.to)
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
        tool_format: str,
        body: Any,
        *,
        thing_id: str | None,
        vendor: str | None,
        version: str | None,
        href: str | None,
    ) -> ImportedTool:
        """Store a tool as an ``lmos:Tool``; without ``id`` the id is derived from vendor and name (re-import
        replaces)."""
        try:
            function = import_tool(tool_format, body)
        except ToolFormatError as error:
            raise BadRequest(
                f"Not a {tool_format} tool: {error}",
                validationErrors=[{"field": error.field, "description": str(error)}],
            ) from error
        if thing_id is None:
            seed = f"lmos-tool:{vendor or ''}:{function.name}"
            thing_id = f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, seed)}"
        document = tool_description(function, thing_id, vendor=vendor, version=version, href=href)
        outcome = await self.directory.put(thing_id, document)
        return ImportedTool(
            id=thing_id, location=f"/things/{thing_id}", created=outcome.created, notices=outcome.notices
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


def _one_per_description(offers: list[Offer]) -> list[Offer]:
    """The best offer of each description: an lmos:capabilities entry and an action may match one requirement."""
    seen: set[str] = set()
    distinct = []
    for offer in offers:
        if offer.thing_id not in seen:
            seen.add(offer.thing_id)
            distinct.append(offer)
    return distinct


#: Ranges that accept any version, and so also providers that declare none.
ANY_VERSION = frozenset({"", "*", "x", "X"})


def _offer_in_range(offer: Offer, version_range: str) -> bool:
    if offer.version is None:
        return version_range.strip() in ANY_VERSION
    return satisfies(offer.version, version_range)


def _range(text: str, name: str) -> str:
    try:
        parse_range(text)
    except RangeError as error:
        raise BadRequest(str(error), invalidParams=[{"name": name, "reason": str(error)}]) from error
    return text


def _version_order(row: VersionRow) -> tuple[Any, ...]:
    """Semantic versions in precedence order, above texts that are none (those in registration order)."""
    if sort_key(row.version) is None:
        return (0, (), row.revision)
    return (1, precedence(row.version), 0)


def _version_info(row: VersionRow, current: str | None) -> VersionInfo:
    compatibility = row.compatibility or {}
    return VersionInfo(
        version=row.version,
        registered=row.registered,
        revision=row.revision,
        current=row.version == current,
        previous_version=row.previous_version,
        verdict=compatibility.get("verdict"),
        honest=compatibility.get("honest"),
    )


def _keys(capability: str) -> tuple[str, ...]:
    """Offers are found by id (exact) or name (any case)."""
    return (capability, capability.lower()) if capability != capability.lower() else (capability,)


def _provider(offer: Offer, details: ProviderDetails) -> Provider:
    return Provider(
        id=offer.thing_id,
        version=offer.version,
        capability=offer.name,
        capability_id=offer.capability_id,
        title=details.title,
        vendor=details.vendor_name,
    )


def _resolve_one(
    requirement: Requirement, candidates: list[Offer], in_range: list[Offer], details: dict[str, ProviderDetails]
) -> Resolution:
    wanted = requirement.capability
    unresolved = functools.partial(
        Resolution, capability=wanted, range=requirement.range, strategy=requirement.strategy, resolved=False
    )
    if not candidates:
        return unresolved(reason=NO_PROVIDER, detail=f"no description offers capability {wanted!r}")

    def live(offer: Offer) -> bool:
        return offer.thing_id in details and details[offer.thing_id].live

    live_in_range = [offer for offer in in_range if live(offer)]
    if not live_in_range:
        if in_range or not any(live(offer) for offer in candidates):
            scope = f" in range {requirement.range!r}" if in_range else ""
            return unresolved(reason=PROVIDER_EXPIRED, detail=f"every provider of {wanted!r}{scope} has expired")
        offered = sorted({offer.version for offer in candidates if offer.version is not None and live(offer)})
        return unresolved(
            reason=NO_VERSION_IN_RANGE,
            detail=f"{wanted!r} is offered in versions {', '.join(offered) or '(none)'}, none in {requirement.range!r}",
        )
    # Providers without a version (matched only by "any version" ranges) come after every versioned one.
    versioned = sorted((offer for offer in live_in_range if offer.version), key=lambda offer: offer.thing_id)
    unversioned = sorted((offer for offer in live_in_range if not offer.version), key=lambda offer: offer.thing_id)
    if requirement.strategy == "lowest":
        versioned.sort(key=lambda offer: precedence(offer.version or ""))
    elif requirement.strategy == "closest":
        target = requirement.closest_to or ""
        versioned.sort(key=lambda offer: precedence(offer.version or ""), reverse=True)
        versioned.sort(key=lambda offer: distance(offer.version or "", target))
    else:
        versioned.sort(key=lambda offer: precedence(offer.version or ""), reverse=True)
    ordered = versioned + unversioned
    chosen, *others = _one_per_description(ordered)
    return Resolution(
        capability=wanted,
        range=requirement.range,
        strategy=requirement.strategy,
        resolved=True,
        provider=_provider(chosen, details[chosen.thing_id]),
        alternatives=[_provider(offer, details[offer.thing_id]) for offer in others[:MAX_ALTERNATIVES]],
    )
