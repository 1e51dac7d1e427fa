"""Settings of the group "Registrations": lifetimes, version policy, JSON-LD contexts, A2A keys."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from registry.config.fields import REGISTRATIONS, setting
from registry.config.parsers import non_negative, one_of, parse_bool, parse_optional_path


@dataclasses.dataclass(frozen=True)
class RegistrationSettings:
    """The fields of :class:`registry.config.Settings` in the group ``REGISTRATIONS``; never made on its own."""

    # No slots of its own: Settings, which gathers the groups, has a slot per field (and no __dict__).
    __slots__ = ()

    max_ttl: int = setting(REGISTRATIONS, 0, "Largest accepted `ttl` in seconds (0 = no limit).")
    mandate_ttl: bool = setting(REGISTRATIONS, False, "Reject registrations without a `ttl`.")
    version_policy: str = setting(
        REGISTRATIONS,
        "warn",
        "A dishonest version bump, a version lower than the one replaced, or other content under a kept version: "
        "`warn` accepts the write with `Registry-Notices`, `enforce` refuses it with 409 (see docs/discovery.md).",
    )
    purge_interval: float = setting(REGISTRATIONS, 60.0, "Seconds between purges of expired descriptions.")
    expiry_grace: float = setting(
        REGISTRATIONS,
        3600.0,
        "Seconds after a registration expires during which only its owner (or an admin) may register its id again; "
        "the purge keeps a tombstone that long (0 = none; docs/security.md).",
    )
    strict_contexts: bool = setting(REGISTRATIONS, False, "Reject descriptions naming an unknown remote `@context`.")
    context_dir: Path | None = setting(
        REGISTRATIONS,
        None,
        "Extra local JSON-LD contexts (`index.json` maps URLs to files).",
    )
    a2a_trusted_keys: Path | None = setting(
        REGISTRATIONS,
        None,
        "JWK Set file with public keys that verify A2A Agent Card signatures on import (none = signatures kept and "
        "reported, not verified).",
    )


#: How each field's ``REGISTRY_*`` variable is read.
PARSERS: dict[str, Callable[[str], Any]] = {
    "max_ttl": non_negative(int),
    "mandate_ttl": parse_bool,
    "version_policy": one_of("warn", "enforce"),
    "purge_interval": non_negative(float),
    "expiry_grace": non_negative(float),
    "strict_contexts": parse_bool,
    "context_dir": parse_optional_path,
    "a2a_trusted_keys": parse_optional_path,
}
