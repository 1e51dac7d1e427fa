"""The summary of a description that discovery queries run on: kind, texts, vendor, version, capabilities.

LMOS carries capabilities in several shapes (research/agent-registries.md §6); all are read into one list:
``lmos:capabilities`` entries (at the top or inside ``lmos:metadata``, keys plain or ``lmos:``-prefixed), every
action of an agent, and every function (action) of a tool.
"""

from __future__ import annotations

from typing import Any

import msgspec

from registry.descriptions.model import LmosKind, lmos_kind, lmos_member, strings_of, types_of
from registry.wire import Capability, Vendor

KIND_AGENT = "agent"
KIND_TOOL = "tool"
KIND_THING = "thing"
KINDS = (KIND_AGENT, KIND_TOOL, KIND_THING)

#: Where a capability was read from.
SOURCE_LMOS = "lmos"
SOURCE_ACTION = "action"
SOURCE_FUNCTION = "function"


class Summary(msgspec.Struct, frozen=True, omit_defaults=True):
    kind: str
    title: str | None = None
    description: str | None = None
    #: Language tags of ``titles`` / ``descriptions`` maps.
    languages: list[str] = []
    vendor: Vendor | None = None
    version: str | None = None
    types: list[str] = []
    capabilities: list[Capability] = []

    def search_texts(self) -> tuple[str, str, str, str]:
        """Texts by full-text weight: titles (A), descriptions and vendor (B), capabilities (C), examples (D)."""
        capability_text = " ".join(
            " ".join(filter(None, (item.name, item.id, item.description))) for item in self.capabilities
        )
        examples = " ".join(example for item in self.capabilities for example in item.examples)
        return (
            self.title or "",
            " ".join(filter(None, (self.description, self.vendor.name if self.vendor else None))),
            capability_text,
            examples,
        )


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _field(entry: dict[str, Any], name: str) -> Any:
    """``name`` of an LMOS object, plain (``version``) or prefixed (``lmos:version``)."""
    if name in entry:
        return entry[name]
    return lmos_member(entry, name)[1]


def _texts(document: dict[str, Any], single: str, plural: str) -> tuple[str | None, list[str]]:
    texts = document.get(plural)
    languages = sorted(key for key in texts if isinstance(key, str)) if isinstance(texts, dict) else []
    text = _text(document.get(single))
    if text is None and isinstance(texts, dict):
        text = _text(texts.get("en")) or next((_text(value) for value in texts.values() if _text(value)), None)
    return text, languages


def _vendor(document: dict[str, Any]) -> Vendor | None:
    _, metadata = lmos_member(document, "metadata")
    if not isinstance(metadata, dict):
        return None
    _, vendor = lmos_member(metadata, "vendor")
    if not isinstance(vendor, dict):
        return None
    name, url = _text(_field(vendor, "name")), _text(_field(vendor, "url"))
    return Vendor(name=name, url=url) if name or url else None


def _version(document: dict[str, Any]) -> str | None:
    version = document.get("version")
    if isinstance(version, dict) and _text(version.get("instance")):
        return _text(version["instance"])
    _, metadata = lmos_member(document, "metadata")
    for holder in (document, metadata if isinstance(metadata, dict) else {}):
        lmos_version = _text(lmos_member(holder, "version")[1])
        if lmos_version:
            return lmos_version
    return None


def _capability_entries(document: dict[str, Any]) -> list[Any]:
    _, metadata = lmos_member(document, "metadata")
    entries: list[Any] = []
    for holder in (document, metadata if isinstance(metadata, dict) else {}):
        for local_name in ("capabilities", "providedCapabilities"):
            value = lmos_member(holder, local_name)[1]
            if isinstance(value, list):
                entries.extend(value)
    return entries


def _schema(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def summarise(document: dict[str, Any]) -> Summary:
    lmos = lmos_kind(document)
    kind = {LmosKind.AGENT: KIND_AGENT, LmosKind.TOOL: KIND_TOOL, None: KIND_THING}[lmos]
    title, title_languages = _texts(document, "title", "titles")
    description, description_languages = _texts(document, "description", "descriptions")
    version = _version(document)
    capabilities: list[Capability] = []
    for entry in _capability_entries(document):
        if not isinstance(entry, dict):
            continue
        name, capability_id = _text(_field(entry, "name")), _text(_field(entry, "id"))
        if not (name or capability_id):
            continue
        capabilities.append(
            Capability(
                name=name or capability_id or "",
                source=SOURCE_LMOS,
                id=capability_id,
                version=_text(_field(entry, "version")) or version,
                description=_text(_field(entry, "description")),
                examples=strings_of(_field(entry, "examples")),
            )
        )
    actions = document.get("actions")
    for name, action in (actions if isinstance(actions, dict) else {}).items():
        if not isinstance(action, dict):
            continue
        capabilities.append(
            Capability(
                name=name,
                source=SOURCE_FUNCTION if kind == KIND_TOOL else SOURCE_ACTION,
                version=version,
                description=_text(action.get("description")) or _text(action.get("title")),
                input=_schema(action.get("input")),
                output=_schema(action.get("output")),
            )
        )
    return Summary(
        kind=kind,
        title=title,
        description=description,
        languages=sorted(set(title_languages) | set(description_languages)),
        vendor=_vendor(document),
        version=version,
        types=types_of(document),
        capabilities=capabilities,
    )
