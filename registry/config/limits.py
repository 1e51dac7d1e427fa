"""Settings of the group "Rate limits and quotas": per principal, owner and client address."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from registry.config.fields import LIMITS, setting
from registry.config.parsers import non_negative, rate_limit


@dataclasses.dataclass(frozen=True)
class LimitSettings:
    """The fields of :class:`registry.config.Settings` in the group ``LIMITS``; never made on its own."""

    # No slots of its own: Settings, which gathers the groups, has a slot per field (and no __dict__).
    __slots__ = ()

    rate_limit_reads: str = setting(
        LIMITS,
        "",
        "Reads per principal (per address when anonymous), e.g. `600/minute`, counted over all replicas; more get 429 "
        "with `Retry-After`.",
    )
    rate_limit_writes: str = setting(
        LIMITS,
        "",
        "Writes per principal, e.g. `60/minute`; a batch counts one write per description (refused whole with 429 "
        "when they do not all fit).",
    )
    rate_limit_auth_failures: str = setting(
        LIMITS,
        "30/minute",
        "Refused API keys or tokens per client address, counted over all replicas; beyond, a request carrying "
        "credentials from that address gets 429 with `Retry-After` without them being checked (empty = no limit).",
    )
    max_descriptions_per_owner: int = setting(
        LIMITS,
        0,
        "Descriptions one owner (identity and tenant) may hold (0 = no cap); more get 403.",
    )
    max_streams_per_principal: int = setting(
        LIMITS,
        0,
        "Concurrent `/events` streams per principal or address (0 = no cap); more get 429.",
    )


#: How each field's ``REGISTRY_*`` variable is read.
PARSERS: dict[str, Callable[[str], Any]] = {
    "rate_limit_reads": rate_limit,
    "rate_limit_writes": rate_limit,
    "rate_limit_auth_failures": rate_limit,
    "max_descriptions_per_owner": non_negative(int),
    "max_streams_per_principal": non_negative(int),
}
