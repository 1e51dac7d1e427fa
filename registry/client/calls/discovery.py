"""Discovery (``/api/v1``): search, find, facets, summaries, kept versions, recent changes."""

from __future__ import annotations

import dataclasses
from urllib.parse import quote

import httpx

from registry.client.calls.call import Call, Page, api_thing_path, decoded, given
from registry.client.models import (
    Facets,
    Findings,
    RecentChanges,
    SearchItem,
    SearchResult,
    ThingSummary,
    VersionDetail,
    VersionInfo,
    VersionList,
)
from registry.client.vocabulary import Convention, Kind, SearchSort, VendorMatch


def search(
    *,
    kind: Kind | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    capability_version: str | None = None,
    type_: str | None = None,
    q: str | None = None,
    sort: SearchSort | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    facets: bool = False,
    vendor_match: VendorMatch | None = None,
    convention: Convention | None = None,
) -> Call[SearchResult]:
    """One page of matches; pass ``next_cursor`` as ``cursor`` for the next (or use ``iter_search``). ``type_`` is
    an @type; ``capability_version`` a range; ``vendor_match``: words (default), exact or fuzzy."""
    params = given(
        kind=kind,
        vendor=vendor,
        vendor_match=vendor_match,
        capability=capability,
        capability_version=capability_version,
        type=type_,
        q=q,
        sort=sort,
        limit=limit,
        cursor=cursor,
        facets=facets or None,
        convention=convention,
    )
    return Call("GET", "/api/v1/search", decoded(SearchResult), params=params)


def find(
    need: str,
    *,
    kind: Kind | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    version: str | None = None,
    limit: int = 10,
) -> Call[Findings]:
    """Agents and tools for a need in plain words, best first: each hit with its score, match quality (strong or
    weak, where the directory grades hits) and the capabilities that matched. ``version`` is a range the
    ``capability``'s version must satisfy (npm ``^1.2`` or Maven ``[1.0,2.0)``), so it needs ``capability``."""
    if not need.strip():
        raise ValueError("find needs a need: what you are looking for, in words")
    if version is not None and capability is None:
        raise ValueError("version needs capability (the capability whose version is constrained)")
    params = given(q=need, kind=kind, vendor=vendor, capability=capability, capability_version=version, limit=limit)
    return Call("GET", "/api/v1/search", decoded(Findings), params=params)


def iter_search(
    *,
    kind: Kind | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    capability_version: str | None = None,
    type_: str | None = None,
    q: str | None = None,
    sort: SearchSort | None = None,
    page_size: int | None = None,
    cursor: str | None = None,
    vendor_match: VendorMatch | None = None,
    convention: Convention | None = None,
) -> Call[Page[SearchItem]]:
    """Every match, page after page (``page_size`` at a time) by the search's keyset cursor; ``cursor`` starts
    after a page already read."""
    first = search(
        kind=kind,
        vendor=vendor,
        capability=capability,
        capability_version=capability_version,
        type_=type_,
        q=q,
        sort=sort,
        limit=page_size,
        cursor=cursor,
        vendor_match=vendor_match,
        convention=convention,
    )
    return _search_pages(first)


def _search_pages(call: Call[SearchResult]) -> Call[Page[SearchItem]]:
    def parse(response: httpx.Response) -> Page[SearchItem]:
        result = call.parse(response)
        if result.next_cursor is None:
            return Page(result.items, None)
        following = dataclasses.replace(call, params={**(call.params or {}), "cursor": result.next_cursor})
        return Page(result.items, _search_pages(following))

    return call.reading(parse)


def facets(
    *,
    kind: Kind | None = None,
    vendor: str | None = None,
    capability: str | None = None,
    capability_version: str | None = None,
    type_: str | None = None,
    q: str | None = None,
    convention: Convention | None = None,
    vendor_match: VendorMatch | None = None,
) -> Call[Facets]:
    """Counts of the matches by kind, vendor, capability and convention (the same filters as ``search``)."""
    params = given(
        kind=kind,
        vendor=vendor,
        vendor_match=vendor_match,
        capability=capability,
        capability_version=capability_version,
        type=type_,
        q=q,
        convention=convention,
    )
    return Call("GET", "/api/v1/facets", decoded(Facets), params=params)


def summary(thing_id: str) -> Call[ThingSummary]:
    """What a description offers: kind, vendor, version, capabilities and lint warnings."""
    return Call("GET", api_thing_path(thing_id, "summary"), decoded(ThingSummary))


def versions(thing_id: str, *, satisfies: str | None = None) -> Call[VersionList]:
    """Kept versions, newest first; with ``satisfies`` (a range) only those in it."""
    return Call("GET", api_thing_path(thing_id, "versions"), decoded(VersionList), params=given(satisfies=satisfies))


def iter_versions(thing_id: str, *, satisfies: str | None = None) -> Call[Page[VersionInfo]]:
    """Kept versions one by one, newest first (the directory answers them in one page)."""
    listing = versions(thing_id, satisfies=satisfies)

    def parse(response: httpx.Response) -> Page[VersionInfo]:
        return Page(listing.parse(response).items, None)

    return listing.reading(parse)


def version(thing_id: str, version: str) -> Call[VersionDetail]:
    """One kept version: its document and its compatibility with the version before."""
    path = api_thing_path(thing_id, "versions/" + quote(version, safe=""))
    return Call("GET", path, decoded(VersionDetail))


def recent_changes(*, limit: int = 50) -> Call[RecentChanges]:
    """The latest entries of the change log, newest first (``seq`` is the event id ``watch`` resumes after)."""
    return Call("GET", "/api/v1/changes", decoded(RecentChanges), params={"limit": limit})
