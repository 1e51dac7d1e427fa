"""The closed vocabularies of the directory's API as ``Literal`` types, so a type checker catches ``kind="robot"``
before the directory answers 400; each has a tuple of its values for choices and checks at run time.

tests/unit/test_sdk_types.py holds them equal to the server's own sets.
"""

from __future__ import annotations

from typing import Literal, get_args

#: What a description is (registry/descriptions/summary.py KINDS).
Kind = Literal["agent", "tool", "thing"]
#: The convention a description was published in (registry/descriptions/model.py CONVENTIONS).
Convention = Literal["lmos", "a2a", "mcp"]
#: Orders of search results (registry/discovery/service.py SORTS).
SearchSort = Literal["relevance", "title", "modified", "expires"]
#: How search's ``vendor`` matches (registry/discovery/service.py VENDOR_MATCHES).
VendorMatch = Literal["words", "exact", "fuzzy"]
#: Change events (registry/events/hub.py EVENT_TYPES); thing_transferred: a new owner.
EventType = Literal["thing_created", "thing_updated", "thing_deleted", "thing_transferred"]
#: LLM tool formats of import and export (registry/descriptions/tool_formats.py FORMATS).
ToolFormat = Literal["openai", "anthropic", "mcp", "lmkit", "mojentic", "allos"]
#: What export produces: the tool formats, and an agent as an A2A Agent Card.
ExportFormat = Literal[ToolFormat, "a2a"]
#: How ``resolve`` picks among providers in range.
Strategy = Literal["highest", "lowest", "closest"]
#: Serialisations of a CONSTRUCT or DESCRIBE answer (registry/http/search.py).
GraphMediaType = Literal[
    "text/turtle",
    "application/ld+json",
    "application/n-triples",
    "application/rdf+xml",
    "application/n-quads",
    "application/trig",
]

KINDS: tuple[Kind, ...] = get_args(Kind)
CONVENTIONS: tuple[Convention, ...] = get_args(Convention)
SEARCH_SORTS: tuple[SearchSort, ...] = get_args(SearchSort)
VENDOR_MATCHES: tuple[VendorMatch, ...] = get_args(VendorMatch)
EVENT_TYPES: tuple[EventType, ...] = get_args(EventType)
TOOL_FORMATS: tuple[ToolFormat, ...] = get_args(ToolFormat)
EXPORT_FORMATS: tuple[ExportFormat, ...] = (*TOOL_FORMATS, "a2a")
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)
GRAPH_MEDIA_TYPES: tuple[GraphMediaType, ...] = get_args(GraphMediaType)

__all__ = [
    "CONVENTIONS",
    "EVENT_TYPES",
    "EXPORT_FORMATS",
    "GRAPH_MEDIA_TYPES",
    "KINDS",
    "SEARCH_SORTS",
    "STRATEGIES",
    "TOOL_FORMATS",
    "VENDOR_MATCHES",
    "Convention",
    "EventType",
    "ExportFormat",
    "GraphMediaType",
    "Kind",
    "SearchSort",
    "Strategy",
    "ToolFormat",
    "VendorMatch",
]
