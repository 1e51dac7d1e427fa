"""Shared vocabulary of descriptions: context URLs, the LMOS namespace, and how to read LMOS members.

LMOS documents bind a prefix (normally ``lmos``) to ``https://eclipse.dev/lmos/protocol/v1`` with or without a
trailing ``/`` or ``#``. Every spelling is read the same way here; the stored document stays as registered.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

TD10_CONTEXT = "https://www.w3.org/2019/wot/td/v1"
TD11_CONTEXT = "https://www.w3.org/2022/wot/td/v1.1"
DISCOVERY_CONTEXT = "https://www.w3.org/2022/wot/discovery"

LMOS_NAMESPACE = "https://eclipse.dev/lmos/protocol/v1"
#: Spellings of the LMOS namespace seen in the wild; all denote the same vocabulary.
LMOS_NAMESPACE_SPELLINGS = (LMOS_NAMESPACE, LMOS_NAMESPACE + "/", LMOS_NAMESPACE + "#")


#: The directory's vocabularies for A2A and MCP members without a TD counterpart (docs/interop.md).
A2A_NAMESPACE = "https://a2a-protocol.org/ns#"
MCP_NAMESPACE = "https://modelcontextprotocol.io/ns#"
#: Types that mark descriptions stored from another convention's document (registry/conventions/).
A2A_CARD_TYPE = "a2a:AgentCard"
MCP_SERVER_TYPE = "mcp:Server"
#: How a description came to the directory: as an LMOS description, an A2A Agent Card or an MCP server.json.
CONVENTION_LMOS, CONVENTION_A2A, CONVENTION_MCP = "lmos", "a2a", "mcp"
CONVENTIONS = (CONVENTION_LMOS, CONVENTION_A2A, CONVENTION_MCP)


class LmosKind(enum.Enum):
    AGENT = "agent"
    TOOL = "tool"


def contexts_of(document: dict[str, Any]) -> list[Any]:
    context = document.get("@context")
    if isinstance(context, list):
        return context
    return [] if context is None else [context]


def _lmos_prefixes(document: dict[str, Any]) -> set[str]:
    """Prefixes the document binds to the LMOS namespace (``lmos`` is always accepted)."""
    prefixes = {"lmos"}
    for entry in contexts_of(document):
        if not isinstance(entry, dict):
            continue
        for term, definition in entry.items():
            iri = definition.get("@id") if isinstance(definition, dict) else definition
            if isinstance(iri, str) and iri in LMOS_NAMESPACE_SPELLINGS:
                prefixes.add(term)
    return prefixes


_LMOS_ONLY = frozenset({"lmos"})


def lmos_local_name(term: str, prefixes: set[str] | frozenset[str] = _LMOS_ONLY) -> str | None:
    """``metadata`` for ``lmos:metadata`` or a full LMOS IRI; None for anything else."""
    for spelling in LMOS_NAMESPACE_SPELLINGS:
        if term.startswith(spelling) and len(term) > len(spelling):
            return term[len(spelling) :].lstrip("/#") or None
    prefix, colon, local = term.partition(":")
    if colon and prefix in prefixes and local and not local.startswith("//"):
        return local
    return None


def lmos_member(obj: dict[str, Any], local_name: str) -> tuple[str | None, Any]:
    """The key and value of the LMOS member ``local_name`` of ``obj`` (e.g. ``lmos:vendor``), if present."""
    canonical = "lmos:" + local_name
    if canonical in obj:
        return canonical, obj[canonical]
    for key, value in obj.items():
        if ":" in key and lmos_local_name(key, _LMOS_ONLY) == local_name:  # no LMOS spelling lacks a colon
            return key, value
    return None, None


def strings_of(value: Any) -> list[str]:
    """A JSON-LD "one or many" string member (``"a"`` or ``["a", "b"]``) as a list; other values give []."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def types_of(document: dict[str, Any]) -> list[str]:
    return strings_of(document.get("@type"))


def convention_of(types: list[str], is_lmos: bool) -> str | None:
    """``mcp`` or ``a2a`` for descriptions typed as published there, ``lmos`` for other agents and tools."""
    if MCP_SERVER_TYPE in types:
        return CONVENTION_MCP
    if A2A_CARD_TYPE in types:
        return CONVENTION_A2A
    return CONVENTION_LMOS if is_lmos else None


def lmos_kind(document: dict[str, Any]) -> LmosKind | None:
    """Agent or tool by ``@type`` (``lmos:Agent`` / ``lmos:Tool`` in any spelling), else None."""
    prefixes = _lmos_prefixes(document)
    for item in types_of(document):
        local = lmos_local_name(item, prefixes)
        if local == "Agent":
            return LmosKind.AGENT
        if local == "Tool":
            return LmosKind.TOOL
    return None


#: Members that list LMOS capabilities: ``lmos:capabilities`` (the TD form) and ``lmos:providedCapabilities`` (the
#: operator's ``capabilities.json`` form), at the top of a description or inside ``lmos:metadata``.
CAPABILITY_LISTS = ("capabilities", "providedCapabilities")


def capability_lists(document: dict[str, Any]) -> Iterator[tuple[list[str], Any]]:
    """The path and value of every member that lists LMOS capabilities, whatever its value is."""
    metadata_key, metadata = lmos_member(document, "metadata")
    holders: list[tuple[list[str], dict[str, Any]]] = [([], document)]
    if metadata_key is not None and isinstance(metadata, dict):
        holders.append(([metadata_key], metadata))
    for prefix, holder in holders:
        for key, value in holder.items():
            if ":" in key and lmos_local_name(key) in CAPABILITY_LISTS:
                yield [*prefix, key], value
