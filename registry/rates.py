"""Rates in the notation of the rate-limit settings: ``600/minute``, ``10 per second``, ``100/5 minutes``.

The amount, a slash or ``per``, an optional multiple and a unit (second, minute, hour or day, singular or plural, any
case). One rate per setting: the rate limits count one window each.
"""

from __future__ import annotations

import dataclasses
import re

#: Seconds per unit.
UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}

_RATE = re.compile(r"\s*(\d+)\s*(?:/|per)\s*(\d+)?\s*([a-z]+?)s?\s*", re.IGNORECASE)


@dataclasses.dataclass(frozen=True, slots=True)
class Rate:
    """At most ``amount`` per ``period`` seconds; ``text`` is the notation it was read from."""

    amount: int
    period: int
    text: str


def parse_rate(text: str) -> Rate:
    """The rate ``text`` writes; ValueError naming the expected notation otherwise."""
    match = _RATE.fullmatch(text)
    unit = UNITS.get(match.group(3).lower()) if match else None
    if match is None or unit is None:
        raise ValueError(
            f"expected a rate such as 600/minute or 10 per second (per second, minute, hour or day), got {text!r}"
        )
    amount, multiple = int(match.group(1)), int(match.group(2) or 1)
    if amount < 1 or multiple < 1:
        raise ValueError(f"expected a rate of at least 1 per at least 1 {match.group(3).lower()}, got {text!r}")
    return Rate(amount, multiple * unit, text.strip())


__all__ = ["UNITS", "Rate", "parse_rate"]
