"""The summary of a description that discovery queries run on: kind, texts, vendor, version, capabilities.

LMOS carries capabilities in several shapes (research/agent-registries.md §6); all are read into one list:
``lmos:capabilities`` entries (at the top or inside ``lmos:metadata``, keys plain or ``lmos:``-prefixed), every
action of an agent, and every function (action) of a tool.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from rapidfuzz import fuzz

from registry.descriptions.gazetteer import gazetteer, purposes
from registry.descriptions.model import (
    LmosKind,
    capability_lists,
    convention_of,
    lmos_kind,
    lmos_member,
    strings_of,
    types_of,
)
from registry.semantic.rdf import lmos_normalised
from registry.wire import Capability, Vendor

KIND_AGENT = "agent"
KIND_TOOL = "tool"
KIND_THING = "thing"
KINDS = (KIND_AGENT, KIND_TOOL, KIND_THING)

#: Where a capability was read from.
SOURCE_LMOS = "lmos"
SOURCE_ACTION = "action"
SOURCE_FUNCTION = "function"


#: How ``Summary.search_texts`` composes a description's full-text words, and which product gazetteer they read:
#: stored with every summary's words (``thing_summaries.search_version``), so that the words of descriptions stored
#: under another are computed again (registry/projections/search_words.py). Raise the number when the composition
#: changes.
SEARCH_TEXTS = f"search-texts-1+gazetteer-{gazetteer().version}"


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
    #: lmos, a2a or mcp (registry.descriptions.model.convention_of); None for plain things.
    convention: str | None = None

    def search_texts(self) -> tuple[str, str, str, str]:
        """Texts by full-text weight: titles (A), descriptions and vendor (B), capabilities with their tags (C),
        examples and what the products the description names are known for (D, registry/descriptions/gazetteer.py).
        Names spelled as paths or domains (``io.github.redis/mcp-redis``) are indexed with their words too, since
        the text parser keeps such a name as one token."""
        capability_text = " ".join(
            " ".join(filter(None, (with_words(item.name), with_words(item.id), item.description, *item.tags)))
            for item in self.capabilities
        )
        examples = " ".join(example for item in self.capabilities for example in item.examples)
        known_for = purposes(self.title, *((self.vendor.name, self.vendor.url) if self.vendor else ()))
        return (
            with_words(self.title) or "",
            " ".join(filter(None, (self.description, with_words(self.vendor.name) if self.vendor else None))),
            capability_text,
            " ".join(filter(None, (examples, known_for))),
        )


_NAME_WORD = re.compile(r"[^\W_]+")
#: Characters that join words into one token of the text parser (paths, domains, snake and kebab case).
_JOINERS = re.compile(r"[./:_@-]")


def name_words(text: str) -> list[str]:
    """The words of a name: ``io.github.redis/mcp-redis`` → ``io``, ``github``, ``redis``, ``mcp``, ``redis``."""
    return _NAME_WORD.findall(text)


def with_words(text: str | None) -> str | None:
    """``text`` followed by its words when it joins them with punctuation (``a.b/c-d`` → ``a.b/c-d a b c d``)."""
    if text is None or not _JOINERS.search(text):
        return text
    return f"{text} {' '.join(name_words(text))}"


_WORD = re.compile(r"\w+")


def vendor_words(text: str) -> list[str]:
    """The words of a vendor name or query, in lower case (``T-Systems`` → ``t``, ``systems``)."""
    return [word.lower() for word in _WORD.findall(text)]


def vendor_matches(query: str, name: str | None) -> bool:
    """Every word of ``query`` is a word of ``name`` or the start of one, in any case: ``telekom`` and
    ``Deutsche Tele`` match "Deutsche Telekom AG" (the rule of the search's ``vendor_match=words``)."""
    if not name:
        return False
    words = vendor_words(name)
    wanted = vendor_words(query)
    return bool(wanted) and all(any(word.startswith(part) for word in words) for part in wanted)


#: Smallest rapidfuzz ratio (0-100) of a word that fuzzily matches a vendor name's word (telecom ~ telekom: 86).
FUZZY_WORD_SCORE = 80


def vendor_fuzzy_matches(query: str, name: str | None) -> bool:
    """Every word of ``query`` is like a word of ``name`` (a prefix of it, or a similar word: typos, c for k)."""
    if not name:
        return False
    words = vendor_words(name)
    wanted = vendor_words(query)
    return bool(wanted) and all(
        any(word.startswith(part) or fuzz.ratio(part, word) >= FUZZY_WORD_SCORE for word in words) for part in wanted
    )


def kind_of(document: dict[str, Any]) -> str:
    """agent, tool or thing: the one vocabulary of ``kind`` (search, facets, events, summaries)."""
    return _kind_of(lmos_normalised(document))


def _kind_of(reading: dict[str, Any]) -> str:
    return {LmosKind.AGENT: KIND_AGENT, LmosKind.TOOL: KIND_TOOL, None: KIND_THING}[lmos_kind(reading)]


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


def vendor_of(document: dict[str, Any]) -> Vendor | None:
    """The ``lmos:vendor`` of a description: ``lmos:metadata`` → ``lmos:vendor`` → ``lmos:name`` and ``lmos:url``,
    whatever spelling the description's context gives them (None for a vendor stated more than once)."""
    return _vendor_of(lmos_normalised(document))


def _vendor_of(reading: dict[str, Any]) -> Vendor | None:
    _, metadata = lmos_member(reading, "metadata")
    if not isinstance(metadata, dict):
        return None
    _, vendor = lmos_member(metadata, "vendor")
    if not isinstance(vendor, dict):
        return None
    name, url = _text(lmos_member(vendor, "name")[1]), _text(lmos_member(vendor, "url")[1])
    return Vendor(name=name, url=url) if name or url else None


def vendor_names(document: dict[str, Any]) -> list[str]:
    """Every vendor name a description states (``lmos:metadata`` → ``lmos:vendor`` → ``lmos:name``, whatever the
    spelling, and however many times): what SPARQL sees as its vendors, and what a key bound to vendors is checked
    against. Validation lets one through at most."""
    return _vendor_names(lmos_normalised(document))


def _vendor_names(reading: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for metadata in _all(lmos_member(reading, "metadata")[1]):
        for vendor in _all(lmos_member(metadata, "vendor")[1]):
            names.extend(name.strip() for name in _all(lmos_member(vendor, "name")[1], str) if name.strip())
    return list(dict.fromkeys(names))


def kind_and_vendor_names(document: dict[str, Any]) -> tuple[str, list[str]]:
    """:func:`kind_of` and :func:`vendor_names` of a description, read once."""
    reading = lmos_normalised(document)
    return _kind_of(reading), _vendor_names(reading)


def _all(value: Any, kind: type = dict) -> list[Any]:
    """The values of kind ``kind`` of a member that may be one value or a list of them."""
    return [item for item in (value if isinstance(value, list) else [value]) if isinstance(item, kind)]


def version_of(document: dict[str, Any]) -> str | None:
    """The version a description declares (``version.instance``, else an LMOS version), as its summary has it."""
    return _version_of(lmos_normalised(document))


def _version_of(document: dict[str, Any]) -> str | None:
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
    return [entry for _, value in capability_lists(document) if isinstance(value, list) for entry in value]


def _schema(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def summarise(document: dict[str, Any]) -> Summary:
    """The summary of a description, its LMOS members read by what their keys expand to."""
    document = lmos_normalised(document)
    kind = _kind_of(document)
    title, title_languages = _texts(document, "title", "titles")
    description, description_languages = _texts(document, "description", "descriptions")
    version = _version_of(document)
    return Summary(
        kind=kind,
        title=title,
        description=description,
        languages=sorted(set(title_languages) | set(description_languages)),
        vendor=_vendor_of(document),
        version=version,
        types=types_of(document),
        capabilities=[*_lmos_capabilities(document, version), *_action_capabilities(document, kind, version)],
        convention=convention_of(types_of(document), kind != KIND_THING),
    )


def _lmos_capabilities(document: dict[str, Any], version: str | None) -> list[Capability]:
    """The entries of the LMOS capability lists that are objects with a name or an id; an entry without a version
    of its own has the description's."""
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
                tags=strings_of(_field(entry, "tags")),
            )
        )
    return capabilities


def _action_capabilities(document: dict[str, Any], kind: str, version: str | None) -> list[Capability]:
    """Every action of the description (a tool's functions), with the description's version."""
    actions = document.get("actions")
    source = SOURCE_FUNCTION if kind == KIND_TOOL else SOURCE_ACTION
    return [
        Capability(
            name=name,
            source=source,
            version=version,
            description=_text(action.get("description")) or _text(action.get("title")),
            input=_schema(action.get("input")),
            output=_schema(action.get("output")),
        )
        for name, action in (actions if isinstance(actions, dict) else {}).items()
        if isinstance(action, dict)
    ]
