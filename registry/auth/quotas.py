"""Rate limits per principal (per client address when anonymous) and a cap on concurrent event streams.

The limiter is the ``limits`` library's moving window in this process's memory: each replica counts its own
requests (so a client spread over N replicas gets up to N times the limit).
"""

from __future__ import annotations

import collections
import math
import time

import limits
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from registry.auth.principal import Scope
from registry.config import Settings
from registry.errors import TooManyRequests


class RateLimits:
    def __init__(self, settings: Settings) -> None:
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._limits = {
            Scope.READ: limits.parse(settings.rate_limit_reads) if settings.rate_limit_reads else None,
            Scope.WRITE: limits.parse(settings.rate_limit_writes) if settings.rate_limit_writes else None,
        }
        self._streams_cap = settings.max_streams_per_principal
        self._streams: collections.Counter[str] = collections.Counter()

    @property
    def limits_reads(self) -> bool:
        return self._limits[Scope.READ] is not None

    @property
    def active(self) -> bool:
        return any(self._limits.values()) or self._streams_cap > 0

    def hit(self, access: Scope, who: str) -> None:
        """Count a request of ``who`` (``key:<name>`` or ``address:<ip>``); 429 once its limit is used up."""
        limit = self._limits[Scope.READ if access is Scope.READ else Scope.WRITE]
        if limit is None or self._limiter.hit(limit, access, who):
            return
        reset, _ = self._limiter.get_window_stats(limit, access, who)
        raise TooManyRequests(
            f"Rate limit of {limit} for {access} requests reached; retry later",
            headers={"Retry-After": str(max(1, math.ceil(reset - time.time())))},
        )

    def open_stream(self, who: str) -> None:
        """Take one of ``who``'s concurrent event streams (give it back with ``close_stream``); 429 if none is left."""
        if self._streams_cap and self._streams[who] >= self._streams_cap:
            raise TooManyRequests(
                f"{self._streams_cap} event streams are open for this client already; close one first",
                headers={"Retry-After": "30"},
            )
        self._streams[who] += 1

    def close_stream(self, who: str) -> None:
        self._streams[who] -= 1
        if self._streams[who] <= 0:
            del self._streams[who]


__all__ = ["RateLimits"]
