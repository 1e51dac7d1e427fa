"""The values the catalog's statements take and give: rows written with a description, search filters and pages,
capability offers and their ranking, kept versions."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from registry.store.database import Record
from registry.tenancy import EVERYTHING, TenantScope


@dataclasses.dataclass(frozen=True, slots=True)
class SummaryRow:
    thing_id: str
    kind: str
    title: str | None
    vendor_name: str | None
    version: str | None
    types: list[str]
    #: The summary served by ``/summary``, as JSON.
    summary_json: str
    #: Texts by full-text weight A, B, C, D.
    search_texts: tuple[str, str, str, str]
    #: How the texts were composed (registry.descriptions.summary.SEARCH_TEXTS).
    search_version: str


@dataclasses.dataclass(frozen=True, slots=True)
class CapabilityRow:
    source: str
    capability_id: str | None
    name: str
    version: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class NewVersion:
    """A version of a description to keep: the document (JSON) as it was registered at ``revision``."""

    version: str
    document_text: str
    revision: int


@dataclasses.dataclass(frozen=True, slots=True)
class Filters:
    kind: str | None = None
    vendor: str | None = None
    #: How ``vendor`` matches a vendor name: exact (any case), words (each word a word or word prefix of the
    #: name, any case) or fuzzy (similar names, typos included).
    vendor_match: str = "words"
    #: The vendor keys a fuzzy ``vendor`` matched (resolved by the store before the query).
    vendor_keys: tuple[str, ...] = ()
    #: Capability id or name; with ``capability_accepts`` only providers of a version it accepts.
    capability: str | None = None
    capability_accepts: Callable[[str], bool] | None = None
    type: str | None = None
    text: str | None = None
    #: How ``text`` matches: all (web-search syntax, every word) or any (plain words, ranked;
    #: registry.discovery.text), ``text_query`` then being the ``to_tsquery`` text of its words.
    text_match: str = "all"
    text_query: str | None = None
    #: lmos, a2a or mcp (registry.descriptions.model.convention_of).
    convention: str | None = None
    #: Whose descriptions may match (registry/auth/tenancy.py).
    readers: TenantScope = EVERYTHING


@dataclasses.dataclass(frozen=True, slots=True)
class Page:
    rows: list[Record]
    #: The sort key and id of the last row when more may follow.
    last: tuple[Any, str] | None


@dataclasses.dataclass(frozen=True, slots=True)
class Offer:
    """A capability as one description offers it."""

    thing_id: str
    capability_id: str | None
    name: str
    version: str | None


#: Why resolution leaves a provider out (besides the vendor rules of :class:`Ranking`).
OUT_OF_RANGE = "out_of_range"
EXPIRED = "expired"


@dataclasses.dataclass(frozen=True, slots=True)
class Ranking:
    """How resolution orders the providers of one capability, decided in Python on the few distinct versions and
    vendor names and applied in SQL, so that only the page answered is loaded."""

    capability: str
    #: Rank of each version in range (lower first; the key None: providers that declare no version).
    version_ranks: dict[str | None, int]
    #: Vendor names ("" for none) the rules leave out, with why.
    vendor_notes: dict[str, str] = dataclasses.field(default_factory=dict)
    #: Rank of preferred vendor names; the others get ``default_preference``.
    preferences: dict[str, int] = dataclasses.field(default_factory=dict)
    default_preference: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class RankedProvider:
    offer: Offer
    title: str | None
    vendor_name: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class LeftOut:
    thing_id: str
    version: str | None
    vendor_name: str | None
    reason: str


@dataclasses.dataclass(frozen=True, slots=True)
class Outline:
    any_live_in_range: bool
    any_in_range: bool
    any_live: bool
    #: Versions offered by live providers.
    live_versions: list[str]


@dataclasses.dataclass(frozen=True, slots=True)
class VersionRow:
    version: str
    document_text: str
    registered: dt.datetime
    revision: int
    previous_version: str | None
    compatibility: dict[str, Any] | None
    #: Principal that registered it (audit; from the change log), None with authentication off.
    registered_by: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class SummaryWrite:
    """What the catalog stores of one written description."""

    row: SummaryRow
    capabilities: Sequence[CapabilityRow]
    #: The version written (None without one): the statement keeps it if the description has none kept yet.
    first_version: NewVersion | None


__all__ = [
    "EXPIRED",
    "OUT_OF_RANGE",
    "CapabilityRow",
    "Filters",
    "LeftOut",
    "NewVersion",
    "Offer",
    "Outline",
    "Page",
    "RankedProvider",
    "Ranking",
    "SummaryRow",
    "SummaryWrite",
    "VersionRow",
]
