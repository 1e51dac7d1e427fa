"""Filtered subscriptions (beyond WoT Discovery): which descriptions a subscriber wants to hear about.

Decided on the description itself (kind, vendor, capabilities, text), so it needs no index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from registry.descriptions.model import lmos_member
from registry.descriptions.summary import KINDS, kind_of, vendor_matches
from registry.errors import BadRequest
from registry.semantic.rdf import lmos_normalised

FILTER_PARAMETERS = ("kind", "vendor", "capability", "q")


def _names(value: Any) -> Iterator[str]:
    """Names of capabilities listed as strings or objects with an id or name (plain or ``lmos:``)."""
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for member in ("id", "name"):
                for candidate in (item.get(member), lmos_member(item, member)[1]):
                    if isinstance(candidate, str):
                        yield candidate


def capabilities_of(document: dict[str, Any]) -> set[str]:
    """Action names and ``lmos:capabilities`` entries (top level or in ``lmos:metadata``, whatever the spelling)."""
    document = lmos_normalised(document)
    found: set[str] = set()
    actions = document.get("actions")
    if isinstance(actions, dict):
        found.update(actions)
    _, metadata = lmos_member(document, "metadata")
    for holder in (document, metadata if isinstance(metadata, dict) else {}):
        _, capabilities = lmos_member(holder, "capabilities")
        if capabilities is not None:
            found.update(_names(capabilities))
    return found


def vendor_of(document: dict[str, Any]) -> str | None:
    """``lmos:metadata`` → ``lmos:vendor`` → ``lmos:name`` (or the vendor itself when it is a string), whatever the
    spelling."""
    document = lmos_normalised(document)
    _, metadata = lmos_member(document, "metadata")
    if not isinstance(metadata, dict):
        return None
    _, vendor = lmos_member(metadata, "vendor")
    if isinstance(vendor, dict):
        vendor = lmos_member(vendor, "name")[1]
    return vendor if isinstance(vendor, str) else None


@dataclasses.dataclass(frozen=True, slots=True)
class DescriptionFilter:
    kind: str | None = None
    vendor: str | None = None
    capability: str | None = None
    text: str | None = None

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> DescriptionFilter:
        kind = params.get("kind")
        if kind is not None and kind not in KINDS:
            raise BadRequest(
                f"Query parameter kind must be one of {', '.join(KINDS)}, got {kind!r}",
                invalidParams=[{"name": "kind", "reason": f"one of {', '.join(KINDS)}"}],
            )
        for name in FILTER_PARAMETERS:
            if name in params and not params[name].strip():
                raise BadRequest(
                    f"Query parameter {name} must not be empty",
                    invalidParams=[{"name": name, "reason": "empty"}],
                )
        return cls(
            kind=kind or None,
            vendor=params.get("vendor"),
            capability=params.get("capability"),
            text=params["q"].casefold() if "q" in params else None,
        )

    @property
    def active(self) -> bool:
        return any(value is not None for value in (self.kind, self.vendor, self.capability, self.text))

    def matches(self, document: dict[str, Any] | None) -> bool:
        """Whether ``document`` (None: a deleted description) passes every filter that is set."""
        return (
            document is not None
            and self._kind_matches(document)
            and self._vendor_matches(document)
            and self._capability_matches(document)
            and self._text_matches(document)
        )

    def _kind_matches(self, document: dict[str, Any]) -> bool:
        return self.kind is None or kind_of(document) == self.kind

    def _vendor_matches(self, document: dict[str, Any]) -> bool:
        return self.vendor is None or vendor_matches(self.vendor, vendor_of(document))

    def _capability_matches(self, document: dict[str, Any]) -> bool:
        return self.capability is None or self.capability in capabilities_of(document)

    def _text_matches(self, document: dict[str, Any]) -> bool:
        """The text is in the title or the description (case-insensitive)."""
        text = self.text
        if text is None:
            return True
        texts = (document.get("title"), document.get("description"))
        return any(isinstance(value, str) and text in value.casefold() for value in texts)


__all__ = ["FILTER_PARAMETERS", "DescriptionFilter", "capabilities_of", "vendor_of"]
