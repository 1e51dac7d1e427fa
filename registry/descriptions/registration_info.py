"""Registration information (WoT Discovery §Registration Information) and the Enriched TD.

``registration`` is server-owned: it is stripped from what is stored and rebuilt from the stored times on every
read. Clients may only ask for a ``ttl`` (or, without one, an ``expires``).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import msgspec

from registry.descriptions.model import DISCOVERY_CONTEXT
from registry.descriptions.validation import FieldError


class Lifetime(msgspec.Struct, frozen=True):
    """What a registration asks for: ``ttl`` seconds from each write, or a fixed ``expires``."""

    ttl: float | None = None
    expires: dt.datetime | None = None

    def expiry(self, modified: dt.datetime) -> dt.datetime | None:
        if self.ttl is not None:
            return modified + dt.timedelta(seconds=self.ttl)
        return self.expires


class LifetimePolicy(msgspec.Struct, frozen=True):
    max_ttl: int = 0
    mandate_ttl: bool = False


def format_time(moment: dt.datetime) -> str:
    """RFC 3339 with an explicit offset (``tdd-absolute-time``)."""
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds")


def parse_time(value: str) -> dt.datetime:
    parsed = dt.datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError("an RFC 3339 date-time needs a time-zone offset")
    return parsed


def _representable(now: dt.datetime, ttl: float) -> bool:
    try:
        now + dt.timedelta(seconds=ttl)
    except OverflowError:
        return False
    return True


def split_registration(
    document: dict[str, Any], policy: LifetimePolicy, now: dt.datetime
) -> tuple[dict[str, Any], Lifetime, list[FieldError]]:
    """The document without ``registration``, the lifetime it asks for, and what is wrong with that request."""
    stored = {key: value for key, value in document.items() if key != "registration"}
    errors: list[FieldError] = []
    registration = _registration_request(document.get("registration"), errors)
    lifetime = _lifetime(registration, policy, now, errors)
    if policy.mandate_ttl and lifetime.ttl is None and not errors:
        errors.append(FieldError("registration.ttl", "this directory requires a ttl on every registration"))
    return stored, lifetime, errors


def _registration_request(registration: Any, errors: list[FieldError]) -> dict[str, Any]:
    """The ``registration`` object a client sent (empty without one); one of another type is added to ``errors``."""
    if registration is not None and not isinstance(registration, dict):
        errors.append(FieldError("registration", "registration must be an object"))
        return {}
    return registration or {}


def _lifetime(
    registration: dict[str, Any], policy: LifetimePolicy, now: dt.datetime, errors: list[FieldError]
) -> Lifetime:
    """The ``ttl`` or, without one, the ``expires`` a registration asks for."""
    raw_ttl = registration.get("ttl")
    if raw_ttl is not None:
        # With a ttl the server MUST ignore a client's expires (tdd-registrationinfo-vocab-expires).
        return Lifetime(ttl=_ttl(raw_ttl, policy, now, errors))
    raw_expires = registration.get("expires")
    expires = None if raw_expires is None else _expires(raw_expires, policy, now, errors)
    return Lifetime(expires=expires)


def _ttl(raw_ttl: Any, policy: LifetimePolicy, now: dt.datetime, errors: list[FieldError]) -> float | None:
    """The ``ttl`` a registration asks for, or None with what is wrong with it added to ``errors``."""
    if isinstance(raw_ttl, bool) or not isinstance(raw_ttl, int | float) or not math.isfinite(raw_ttl):
        problem = "ttl must be a number of seconds"
    elif raw_ttl <= 0:
        problem = "ttl must be greater than zero"
    elif policy.max_ttl and raw_ttl > policy.max_ttl:
        problem = f"ttl {raw_ttl} exceeds this directory's maximum of {policy.max_ttl}"
    elif not _representable(now, raw_ttl):
        problem = f"ttl {raw_ttl} is too large: it expires after the year 9999"
    else:
        return float(raw_ttl)
    errors.append(FieldError("registration.ttl", problem))
    return None


def _expires(
    raw_expires: Any, policy: LifetimePolicy, now: dt.datetime, errors: list[FieldError]
) -> dt.datetime | None:
    """The ``expires`` a registration asks for; what is wrong with it is added to ``errors``."""
    try:
        expires = parse_time(raw_expires) if isinstance(raw_expires, str) else None
    except ValueError:
        expires = None
    if expires is None:
        errors.append(FieldError("registration.expires", "expires must be an RFC 3339 date-time with an offset"))
    elif expires <= now:
        errors.append(FieldError("registration.expires", "expires lies in the past"))
    elif policy.max_ttl and expires > now + dt.timedelta(seconds=policy.max_ttl):
        errors.append(FieldError("registration.expires", f"expires is more than {policy.max_ttl} s in the future"))
    return expires


def _registration(
    created: dt.datetime, modified: dt.datetime, expires: dt.datetime | None, ttl: float | None, retrieved: dt.datetime
) -> dict[str, Any]:
    registration: dict[str, Any] = {"created": format_time(created), "modified": format_time(modified)}
    if expires is not None:
        registration["expires"] = format_time(expires)
    if ttl is not None:
        registration["ttl"] = int(ttl) if ttl.is_integer() else ttl
    registration["retrieved"] = format_time(retrieved)
    return registration


def _with_discovery_context(context: Any) -> list[Any] | None:
    """The @context with the discovery context appended, or None when it is already there."""
    contexts = context if isinstance(context, list) else ([] if context is None else [context])
    return None if DISCOVERY_CONTEXT in contexts else [*contexts, DISCOVERY_CONTEXT]


def enrich(
    document: dict[str, Any],
    *,
    created: dt.datetime,
    modified: dt.datetime,
    expires: dt.datetime | None,
    ttl: float | None,
    retrieved: dt.datetime,
) -> dict[str, Any]:
    """The Enriched TD: ``registration`` added and the discovery context appended (``tdd-context-injection``)."""
    enriched = dict(document)
    context = _with_discovery_context(enriched.get("@context"))
    if context is not None:
        enriched["@context"] = context
    enriched["registration"] = _registration(created, modified, expires, ttl, retrieved)
    return enriched


_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])


def enrich_json(
    document_text: str,
    *,
    created: dt.datetime,
    modified: dt.datetime,
    expires: dt.datetime | None,
    ttl: float | None,
    retrieved: dt.datetime,
) -> bytes:
    """``enrich`` straight from the stored JSON to the served JSON, byte for byte the same result.

    Only the top level is parsed; every other member is copied through as raw JSON, which makes serving a TD
    several times cheaper than decoding and re-encoding the whole document.
    """
    members: dict[str, Any] = _TOP_LEVEL.decode(document_text)
    raw_context = members.get("@context")
    context = _with_discovery_context(None if raw_context is None else msgspec.json.decode(raw_context))
    if context is not None:
        members["@context"] = context
    members["registration"] = _registration(created, modified, expires, ttl, retrieved)
    return msgspec.json.encode(members)
