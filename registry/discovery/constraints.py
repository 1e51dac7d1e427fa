"""Constraints stated in a need's words: who publishes it ("made by GitHub itself", "Stripe's own") and which
versions ("version 2 or later", "at version 1.2 or higher").

They rank rather than filter (registry/discovery/needs.py): a description of the vendor named, or of a version in the
range, comes first; the others stay in the answer below them, since a need's words are read, not parsed.
"""

from __future__ import annotations

import dataclasses
import re

from registry.descriptions.gazetteer import HOSTING
from registry.descriptions.summary import name_words
from registry.descriptions.versions import satisfies

_VERSION = r"(\d+(?:\.\d+){0,2})"
_AT_LEAST = re.compile(
    rf"\b(?:at\s+)?(?:version|v)\s*{_VERSION}\s*(?:or|and)\s+(?:later|newer|higher|above|up|more)\b|"
    rf"\b(?:version|v)\s*{_VERSION}\s*\+",
    re.IGNORECASE,
)
_BELOW = re.compile(rf"\b(?:version|v)\s*(?:below|under|before|earlier than|older than)\s*{_VERSION}", re.IGNORECASE)
#: A name of one to four words, the first capitalised (``GitHub``, ``Eclipse LMOS``, ``Model Context Protocol``).
_NAME = r"([A-Z][\w.-]*(?:\s+[A-Z][\w.-]*){0,3})"
_VENDOR = (
    re.compile(rf"\b(?:made|built|published|released|maintained|written|provided|offered)\s+by\s+{_NAME}"),
    re.compile(rf"\bfrom\s+(?:the\s+)?{_NAME}(?:\s+(?:itself|themselves|project|team|officially))"),
    re.compile(rf"\bfrom\s+{_NAME}\s*$"),
    re.compile(rf"\bof\s+the\s+{_NAME}\s+project\b"),
    re.compile(rf"\b{_NAME}'s\s+own\b"),
    re.compile(rf"\b{_NAME}\s+publishes\b"),
    re.compile(rf"\bthe\s+official\s+{_NAME}\b"),
)


#: Labels that end a domain and start a namespace (``stripe.com``, ``com.stripe``).
_TOP_LEVEL = frozenset({"io", "com", "org", "net", "dev", "app", "co", "ai"})


@dataclasses.dataclass(frozen=True, slots=True)
class Constraints:
    #: The words of the vendor named, in lower case (``["eclipse", "lmos"]``).
    vendor: tuple[str, ...] = ()
    #: A version range (npm syntax: ``>=2``).
    versions: str | None = None
    #: The need without the version phrase (its words say nothing of the task).
    text: str = ""

    def vendor_matches(self, vendor_name: str | None, names: list[str]) -> bool:
        """Whether the vendor (or a name: an MCP server's namespace) is the one named: its words, or its words
        run together (``Model Context Protocol`` is ``modelcontextprotocol``)."""
        if not self.vendor:
            return False
        joined = "".join(self.vendor)
        for name in [vendor_name or "", *names]:
            words = owner_words(name)
            if joined in words or all(word in words for word in self.vendor):
                return True
        return False

    def version_matches(self, version: str | None) -> bool | None:
        """Whether ``version`` is in the range named (None: no range named, or no version to compare)."""
        if self.versions is None or version is None:
            return None
        try:
            return satisfies(version, self.versions)
        except ValueError:
            return None


def owner_words(name: str) -> list[str]:
    """The words of a name that may say who publishes: a plain name's words (``Microsoft Learn Docs``); of a name
    spelled as a namespace (``io.github.ddukbg/github-enterprise-mcp``, ``com.stripe``) or a domain
    (``stripe.com``), its labels without those that say where it is hosted, from the top-level end (``ddukbg``,
    ``stripe``; ``io.github.github`` is ``github``): the repository's words say what it works with, and every server
    published under ``io.github`` shares those."""
    text = name.strip()
    if " " in text or not any(joiner in text for joiner in "./"):
        return [word.lower() for word in name_words(text)]
    return _owner_labels([word.lower() for word in name_words(text.split("/", 1)[0])])


def _owner_labels(labels: list[str]) -> list[str]:
    """A namespace's or domain's labels from its top level, those that say where it is hosted left out (the last
    one kept)."""
    if labels and labels[-1] in _TOP_LEVEL and labels[0] not in _TOP_LEVEL:
        labels.reverse()  # a domain: read from its top level, as a namespace is
    while len(labels) > 1 and (labels[0] in HOSTING or labels[0] in _TOP_LEVEL):
        labels.pop(0)
    return labels


def read_constraints(need: str) -> Constraints:
    """The vendor and version constraints a need states, and the need without its version phrase."""
    versions, text = None, need
    if found := _AT_LEAST.search(need):
        versions = f">={found.group(1) or found.group(2)}"
        text = (need[: found.start()] + need[found.end() :]).strip(" ,")
    elif found := _BELOW.search(need):
        versions = f"<{found.group(1)}"
        text = (need[: found.start()] + need[found.end() :]).strip(" ,")
    vendor: tuple[str, ...] = ()
    for pattern in _VENDOR:
        if named := pattern.search(need):
            vendor = tuple(word.lower() for word in name_words(named.group(1)))
            break
    return Constraints(vendor=vendor, versions=versions, text=text)


__all__ = ["Constraints", "owner_words", "read_constraints"]
