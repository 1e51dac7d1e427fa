"""How a setting is declared: its group, its default and its one description; and the error a bad value raises."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

ENV_PREFIX = "REGISTRY_"


class ConfigError(ValueError):
    """A REGISTRY_* variable holds a value that cannot be used; raised at start-up, never later."""


#: The groups of settings, in the order the README lists them.
SERVER = "Server"
CONNECTIONS = "Connections and requests"
DATABASE = "Database"
REGISTRATIONS = "Registrations"
SEARCH = "Reads and search"
SPARQL = "SPARQL"
EVENTS = "Events"
AUTH = "Authentication"
LIMITS = "Rate limits and quotas"
OPERATIONS = "Logs and operations"
GROUPS = (SERVER, CONNECTIONS, DATABASE, REGISTRATIONS, SEARCH, SPARQL, EVENTS, AUTH, LIMITS, OPERATIONS)


@dataclasses.dataclass(frozen=True, slots=True)
class _Factory:
    make: Callable[[], Any]


def factory(make: Callable[[], Any]) -> Any:
    """A default computed when a :class:`Settings` is made (``setting``'s ``default``)."""
    return _Factory(make)


def setting(group: str, default: Any, doc: str, *, shown: str | None = None) -> Any:
    """A field of :class:`Settings`: its ``group`` (one of ``GROUPS``), its ``default`` and its ``doc``, the one
    description of the setting (Markdown; the README's configuration table is generated from it). ``shown`` is the
    default as the table shows it, where the value alone would not say it (a default computed from other settings)."""
    metadata = {"group": group, "doc": doc, "shown": shown}
    if isinstance(default, _Factory):
        return dataclasses.field(default_factory=default.make, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)
