"""Other formats: LLM tool definitions and A2A Agent Cards imported as descriptions, descriptions exported."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from registry.client.calls.call import Call, api_thing_path, checked, decoded, given, json_body
from registry.client.models import ImportedAgent, ImportedTool
from registry.client.vocabulary import ExportFormat, ToolFormat


def import_tool(
    definition: Any,
    tool_format: ToolFormat,
    *,
    thing_id: str | None = None,
    vendor: str | None = None,
    version: str | None = None,
    href: str | None = None,
) -> Call[ImportedTool]:
    """Store an LLM tool definition as an lmos:Tool (without ``thing_id`` re-importing replaces it)."""
    params = given(format=tool_format, id=thing_id, vendor=vendor, version=version, href=href)
    return Call("POST", "/api/v1/tools/import", decoded(ImportedTool), params=params, **json_body(definition))


def import_card(card: Any, *, thing_id: str | None = None) -> Call[ImportedAgent]:
    """Store an A2A Agent Card as an lmos:Agent (without ``thing_id`` re-importing the card replaces it)."""
    params = given(format="a2a", id=thing_id)
    return Call("POST", "/api/v1/agents/import", decoded(ImportedAgent), params=params, **json_body(card))


#: One tool definition, or a list of them.
Exported = dict[str, Any] | list[dict[str, Any]]


def export(thing_id: str, tool_format: ExportFormat) -> Call[Exported]:
    """A tool as one definition (a dict); an agent, or a tool with several functions, as a list of them; an agent
    as its A2A Agent Card with ``a2a``."""

    def parse(response: httpx.Response) -> Exported:
        exported: Exported = msgspec.json.decode(checked(response).content, type=Exported)
        return exported

    return Call("GET", api_thing_path(thing_id, "export"), parse, params={"format": tool_format})
