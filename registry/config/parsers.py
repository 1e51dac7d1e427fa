"""How the value of a ``REGISTRY_*`` variable is read: each parser takes the raw string and returns the value, or
raises ``ValueError`` with what was expected (``Settings.from_env`` turns it into a :class:`ConfigError`)."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import platformdirs

from registry.rates import parse_rate

T = TypeVar("T")


def default_data_dir() -> Path:
    """Where the embedded PostgreSQL and the SPARQL index live unless ``REGISTRY_DATA_DIR`` says."""
    return Path(platformdirs.user_data_dir("lmos-registry", appauthor=False))


def parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"expected a boolean (true/false), got {raw!r}")


def parse_list(raw: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def parse_path(raw: str) -> Path:
    return Path(raw).expanduser()


def parse_optional_path(raw: str) -> Path | None:
    return Path(raw).expanduser() if raw.strip() else None


def choice(*choices: str) -> Callable[[str], str]:
    def parse_choice(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {raw!r}")
        return value

    return parse_choice


def non_negative(parse: Callable[[str], T]) -> Callable[[str], T]:
    def parse_positive(raw: str) -> T:
        value = parse(raw)
        if value < 0:  # type: ignore[operator]
            raise ValueError(f"must not be negative, got {raw!r}")
        return value

    return parse_positive


def positive(parse: Callable[[str], T]) -> Callable[[str], T]:
    def parse_above_zero(raw: str) -> T:
        value = parse(raw)
        if value <= 0:  # type: ignore[operator]
            raise ValueError(f"must be above zero, got {raw!r}")
        return value

    return parse_above_zero


AUTH_MODES = ("off", "writes", "all")


def auth_mode(raw: str) -> str:
    mode = raw.strip().lower()
    if mode and mode not in AUTH_MODES:
        raise ValueError(f"expected one of {', '.join(AUTH_MODES)}, got {raw!r}")
    return mode


def algorithms(raw: str) -> tuple[str, ...]:
    names = parse_list(raw)
    if not names or any(name.lower() == "none" for name in names):
        raise ValueError(f"expected signature algorithms such as RS256,ES256 (never none), got {raw!r}")
    return names


def rate_limit(raw: str) -> str:
    """A rate such as ``600/minute`` (:mod:`registry.rates`), checked at start-up; empty for none."""
    if raw.strip():
        parse_rate(raw)
    return raw.strip()


def trusted_proxies(raw: str) -> tuple[str, ...]:
    """Addresses and CIDR blocks separated by commas, each checked at start-up."""
    entries = parse_list(raw)
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ValueError(f"expected IP addresses or CIDR blocks separated by commas, got {entry!r}") from None
    return entries


def at_least_one(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise ValueError(f"must be at least 1, got {raw!r}")
    return value


def one_of(*choices: str) -> Callable[[str], str]:
    def parse_choice(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got {raw!r}")
        return value

    return parse_choice
