"""What a need in words finds: ranked hits with their score, match quality, the matched capability and how to call
it. The wire types of the MCP tool ``find`` (registry/http/mcp_server.py), the SDK's ``find`` and ``registry find``.

A hit comes from the search (``GET /api/v1/search?q=``); the fields the search adds for a need in words (``score``
from 0 to 1, ``match``, ``matched``, and the result's ``retrieval``) are optional here, so that an answer of a
directory whose search lacks them still reads. Plain msgspec Structs, as registry/wire.py, for the SDK to import
without the server stack.
"""

from __future__ import annotations

from typing import Any

import msgspec

from registry.wire import CapabilityBrief, Vendor

#: The match qualities the search tells apart: ``strong`` (a fit), ``weak`` (the best there is, maybe no fit).
MATCH_QUALITIES = ("strong", "weak")


class MatchedCapability(msgspec.Struct, frozen=True, omit_defaults=True):
    """A capability, action or skill of a hit that matched the need: the one to call."""

    name: str | None = None
    id: str | None = None
    #: lmos (lmos:capabilities), action (an agent's) or function (a tool's), when the search says.
    source: str | None = None


class Form(msgspec.Struct, frozen=True, omit_defaults=True):
    """One way to call a hit (a Thing Description form): the URL, its operation and binding."""

    href: str
    op: str | list[str] | None = None
    #: The action (capability) the form belongs to; None for a form of the whole description.
    capability: str | None = None
    content_type: str | None = msgspec.field(default=None, name="contentType")
    #: The protocol binding or transport (A2A ``JSONRPC``, MCP ``streamable-http``, ...), when the form names one.
    binding: str | None = None


class Invocation(msgspec.Struct, frozen=True, omit_defaults=True):
    """How to call a hit: its endpoint (the first form's URL) and its forms, the matched capability's first."""

    endpoint: str | None = None
    forms: list[Form] = []


class Found(msgspec.Struct, frozen=True, omit_defaults=True):
    """One hit for a need, best first."""

    id: str
    #: agent, tool or thing.
    kind: str
    title: str | None = None
    description: str | None = None
    vendor: Vendor | None = None
    version: str | None = None
    #: lmos, a2a or mcp: the convention the description was published in.
    convention: str | None = None
    #: Relevance to the need (0 to 1 where the search scores needs in words, comparable across needs).
    score: float | None = None
    #: strong or weak (see MATCH_QUALITIES); None where the search does not grade hits.
    match: str | None = None
    #: The capabilities, actions or skills that matched the need.
    matched: list[MatchedCapability] = []
    capabilities: list[CapabilityBrief] = []
    #: How to call it (the MCP tool ``find`` reads it from the description; the SDK leaves it out).
    call: Invocation | None = None


class Findings(msgspec.Struct, frozen=True, omit_defaults=True):
    """The hits for a need, best first."""

    items: list[Found]
    #: How the hits were retrieved (hybrid, lexical, ...), where the search says.
    retrieval: str | None = None
    #: Pass as ``cursor`` to the search for the next hits; None on the last page.
    next_cursor: str | None = None


def findings_of(search_result: Any) -> Findings:
    """A search result (the JSON of ``GET /api/v1/search`` decoded, or its Struct as builtins) as findings; the
    members a find does not show are dropped, the optional ones kept where present."""
    return msgspec.convert(search_result, Findings, strict=False)


__all__ = ["MATCH_QUALITIES", "Findings", "Form", "Found", "Invocation", "MatchedCapability", "findings_of"]
