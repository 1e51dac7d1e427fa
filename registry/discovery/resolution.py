"""Capability resolution's rules, decided in Python on the few distinct versions and vendor names the catalog
offers: which versions a range accepts and in what order, what vendor preferences say of each vendor, and how a
resolution explains itself. :meth:`DiscoveryService.resolve` applies them through the catalog's statements."""

from __future__ import annotations

from registry.descriptions.summary import vendor_matches
from registry.descriptions.versions import RangeError, distance, parse_range, precedence, satisfies
from registry.errors import BadRequest
from registry.store.catalog import RankedProvider, Ranking
from registry.wire import CandidateNote, Explanation, Provider, Requirement, Resolution

#: Why the vendor rules leave a provider out (explanations), and why none was chosen when they left out all.
VENDOR_EXCLUDED = "vendor_excluded"
VENDOR_NOT_INCLUDED = "vendor_not_included"

#: Ranges that accept any version, and so also providers that declare none.
ANY_VERSION = frozenset({"", "*", "x", "X"})


def offer_in_range(version: str | None, version_range: str) -> bool:
    if version is None:
        return version_range.strip() in ANY_VERSION
    return satisfies(version, version_range)


def checked_range(text: str, name: str) -> str:
    """``text`` if it is a version range; else 400 naming the parameter ``name``."""
    try:
        parse_range(text)
    except RangeError as error:
        raise BadRequest(str(error), invalidParams=[{"name": name, "reason": str(error)}]) from error
    return text


def provider_of(provider: RankedProvider) -> Provider:
    offer = provider.offer
    return Provider(
        id=offer.thing_id,
        version=offer.version,
        capability=offer.name,
        capability_id=offer.capability_id,
        title=provider.title,
        vendor=provider.vendor_name,
    )


def _vendor_note(requirement: Requirement, vendor: str | None) -> str | None:
    """Why the vendor preferences leave a provider of ``vendor`` out, if they do."""
    if any(vendor_matches(pattern, vendor) for pattern in requirement.exclude_vendors):
        return VENDOR_EXCLUDED
    if requirement.include_vendors and not any(vendor_matches(p, vendor) for p in requirement.include_vendors):
        return VENDOR_NOT_INCLUDED
    return None


def _preference(requirement: Requirement, vendor: str | None) -> int:
    """The rank of a vendor among ``prefer_vendors`` (the others after them)."""
    ranks = [index for index, pattern in enumerate(requirement.prefer_vendors) if vendor_matches(pattern, vendor)]
    return min(ranks, default=len(requirement.prefer_vendors))


def rule_of(requirement: Requirement) -> str:
    order = {
        "highest": "the highest version",
        "lowest": "the lowest version",
        "closest": f"the version closest to {requirement.closest_to}",
    }[requirement.strategy]
    parts = [f"{order} in range {requirement.range!r} among live providers"]
    if requirement.include_vendors:
        parts.append(f"of vendors {', '.join(requirement.include_vendors)}")
    if requirement.exclude_vendors:
        parts.append(f"not of vendors {', '.join(requirement.exclude_vendors)}")
    rule = " ".join(parts)
    if requirement.prefer_vendors:
        rule += f"; vendors {', '.join(requirement.prefer_vendors)} first"
    return rule + "; providers without a version last, then by id"


def unresolved(
    requirement: Requirement, reason: str, detail: str, considered: int, notes: list[CandidateNote]
) -> Resolution:
    return Resolution(
        capability=requirement.capability,
        range=requirement.range,
        strategy=requirement.strategy,
        resolved=False,
        reason=reason,
        detail=detail,
        explanation=Explanation(considered=considered, candidates=notes, rule=rule_of(requirement)),
    )


def _version_ranks(requirement: Requirement, version_range: str, versions: list[str | None]) -> dict[str | None, int]:
    """The rank of each version in range: the strategy's order, equal precedence equal rank, and the providers
    without a version after every versioned one."""
    in_range = [version for version in versions if offer_in_range(version, version_range)]
    ranks: dict[str | None, int] = {}
    rank, previous = -1, ""
    for version in _strategy_order(requirement, in_range):
        if rank < 0 or precedence(version) != precedence(previous):
            rank += 1
        ranks[version], previous = rank, version
    for unversioned in in_range:
        if not unversioned:
            ranks[unversioned] = rank + 1
    return ranks


def _strategy_order(requirement: Requirement, in_range: list[str | None]) -> list[str]:
    """The versions (none empty) of ``in_range`` in the strategy's order: highest or lowest precedence first, or
    nearest ``closest_to`` first (equally near ones highest first)."""
    versioned = [version for version in in_range if version]
    versioned.sort(key=precedence, reverse=requirement.strategy != "lowest")
    if requirement.strategy == "closest":
        target = requirement.closest_to or ""
        versioned.sort(key=lambda version: distance(version, target))
    return versioned


def ranking_of(requirement: Requirement, version_range: str, versions: list[str | None], vendors: list[str]) -> Ranking:
    """The strategy's order of the versions in range (equal precedence, equal rank; providers without a version
    after every versioned one), and what the vendor rules say of each vendor name ("" for none)."""
    ranks = _version_ranks(requirement, version_range, versions)
    notes = {name: note for name in vendors if (note := _vendor_note(requirement, name or None)) is not None}
    preferences = {name: _preference(requirement, name or None) for name in vendors}
    return Ranking(
        requirement.capability,
        ranks,
        vendor_notes=notes,
        preferences=preferences if requirement.prefer_vendors else {},
        default_preference=len(requirement.prefer_vendors),
    )


__all__ = [
    "ANY_VERSION",
    "VENDOR_EXCLUDED",
    "VENDOR_NOT_INCLUDED",
    "checked_range",
    "offer_in_range",
    "provider_of",
    "ranking_of",
    "rule_of",
    "unresolved",
]
