"""Who may write which description: the one check every write of the directory goes through.

``authorize_write`` is called under the id's lock with who holds the id now and what would be stored, by the
directory service for PUT, POST, PATCH, DELETE, lease renewals, batches, tool and A2A card imports (and by any
other publisher, such as the MCP registry API). Rules, each named in the 403 it causes:

- visibility: a principal that cannot read the description (another tenant's) gets the answer a missing one
  gets (404 for a change of it; a create cannot take the id, so 403 ``owner`` without naming anyone);
- ``owner``: an id is held by an owner identity (``key:…`` or ``jwt:<issuer>|…``, registry/auth/principal.py)
  *and* its tenant; only that owner, or an admin, may change it. One without an owner (stored while
  authentication was off) only an admin may change, or transfer. A registration that expired stays held by its
  owner for ``REGISTRY_EXPIRY_GRACE`` seconds (the purge keeps a tombstone that long), so an agent whose lease
  lapsed gets its id back when it registers again;
- ``namespace``: a principal bound to id patterns may only register (create) ids matching one of them, and only
  import A2A cards whose URL matches one; no principal may create an id held by a description it cannot see
  (another tenant's): both refusals are one answer (``unavailable_id``), so it does not tell them apart;
- ``vendor``: a principal bound to vendor names may only register descriptions whose ``lmos:vendor`` names are all
  among them (what stops a team registering agents in another vendor's name), the names read by what the keys
  expand to in the description's JSON-LD context, as SPARQL reads them.

Ids the directory derives from what a description says of itself (a tool's ``uuid5(vendor:name)``, an A2A card's
from its URL and name) belong to the party bound to that vendor or URL: such a rightful party takes the id over
from a holder that was not (the first to register the id cannot keep its rightful party out).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

from registry.auth.principal import (
    ISSUER_END,
    KEY_PREFIX,
    TOKEN_PREFIX,
    Principal,
    escape_issuer,
    identity,
    unescape_issuer,
)
from registry.auth.tenancy import writer_scope
from registry.descriptions.summary import vendor_names
from registry.errors import BadRequest, Forbidden, NotFound
from registry.tenancy import Holder


@functools.lru_cache(maxsize=1024)
def _pattern(namespace: str) -> re.Pattern[str]:
    """``*`` matches any run of characters (``/`` and ``:`` included); everything else literally."""
    return re.compile(".*".join(re.escape(part) for part in namespace.split("*")), re.DOTALL)


def in_namespaces(thing_id: str, namespaces: tuple[str, ...]) -> bool:
    return any(_pattern(namespace).fullmatch(thing_id) for namespace in namespaces)


@dataclasses.dataclass(frozen=True, slots=True)
class DerivedId:
    """What the directory derived an id from: a tool's vendor name, or an A2A card's URL."""

    vendor: str | None = None
    url: str | None = None

    def binds(self, principal: Principal) -> bool:
        """Whether ``principal`` is bound to it: the vendor is among its vendors, or the URL in its namespaces.
        A principal bound to nothing is bound to no vendor or URL (it may register, but not as the rightful one)."""
        if self.vendor is not None:
            return self.vendor.casefold() in {name.casefold() for name in principal.vendors}
        if self.url is not None:
            return bool(principal.namespaces) and in_namespaces(self.url, principal.namespaces)
        return False


@dataclasses.dataclass(frozen=True, slots=True)
class Grant:
    """What an authorized write does to its id's holder."""

    #: The previous holder (another owner, not bound as the writer is) loses the id to the writer.
    takes_over: bool = False
    #: Stored with the description: its owner holds it rightfully (see ``Holder.rightful``).
    rightful: bool = False


def unavailable_id(principal: Principal, thing_id: str) -> Forbidden:
    """The one refusal of an id a principal may not create: outside its namespaces, or held by a description it
    cannot see (another tenant's). Both causes answer alike, so that the answer does not tell an id another tenant
    holds from one outside the namespaces."""
    allowed = f" matching {', '.join(principal.namespaces)}" if principal.namespaces else ""
    return Forbidden(
        f"The id {thing_id!r} is not available to {principal.name!r}: it may register new ids{allowed} that no one "
        "else holds",
        rule="namespace",
    )


def not_found(thing_id: str) -> NotFound:
    """The answer for a description that does not exist, and for one the principal cannot read."""
    return NotFound(f"No Thing Description with id {thing_id!r}")


def may_see(principal: Principal | None, tenant: str | None) -> bool:
    """Whether the principal of a write may read a description of ``tenant`` (registry/auth/tenancy.py)."""
    return writer_scope(principal).sees(tenant)


def ensure_visible(
    principal: Principal | None, thing_id: str, tenant: str | None, missing: NotFound | None = None
) -> None:
    """``missing`` (default: ``not_found``) if ``principal`` may not read a description of ``tenant``: checked
    before any precondition, so that nothing tells another tenant's description from a missing one."""
    if not may_see(principal, tenant):
        raise missing or not_found(thing_id)


def authorize_write(
    principal: Principal | None,
    thing_id: str,
    document: dict[str, Any] | None,
    *,
    holder: Holder | None,
    creates: bool = True,
    assigned_id: bool = False,
    derived: DerivedId | None = None,
) -> Grant:
    """Raise unless ``principal`` may write ``document`` (None: a delete or renewal) at ``thing_id``.

    ``holder`` holds the id now (None: it is free); ``creates``: the write registers the id when it is free (PUT,
    POST, imports), not a change of an existing description only (PATCH, DELETE, lease); ``assigned_id``: the
    directory chose the id (anonymous registrations, derived ids), which no id pattern applies to; ``derived``:
    what it derived the id from. Without a principal (authentication off) everything is allowed.
    """
    if principal is None or principal.is_admin:
        return _unrestricted_grant(principal, holder)
    bound = derived is not None and derived.binds(principal)
    takes_over = _takes_over_or_refuse(principal, thing_id, holder, creates=creates, derived=derived)
    new = holder is None or not holder.live or takes_over
    _check_namespaces(principal, thing_id, derived, checks_id=new and not assigned_id, bound=bound)
    _check_vendor(principal, document)
    return Grant(takes_over=takes_over, rightful=bound or (holder is not None and not takes_over and holder.rightful))


def _unrestricted_grant(principal: Principal | None, holder: Holder | None) -> Grant:
    """The grant of an admin's write, or of any write while authentication is off (``principal`` None)."""
    if holder is not None and holder.live:
        return Grant(rightful=holder.rightful)  # a change of it: its holder stays
    # What an admin registers is held as an admin's decision; nothing is while authentication is off.
    return Grant(rightful=principal is not None)


def _takes_over_or_refuse(
    principal: Principal, thing_id: str, holder: Holder | None, *, creates: bool, derived: DerivedId | None
) -> bool:
    """Whether the write takes the id from another owner's ``holder``; refused (``_refuse_holder``) when another
    owner holds it and the write may not take it over."""
    if holder is None or (holder.owner, holder.tenant) == (principal.owner, principal.tenant):
        return False
    takes_over = creates and may_take_over(principal, holder, derived)
    if not takes_over:
        _refuse_holder(principal, thing_id, holder, creates=creates)
    return takes_over


def _check_namespaces(
    principal: Principal, thing_id: str, derived: DerivedId | None, *, checks_id: bool, bound: bool
) -> None:
    """Refuse an id (when ``checks_id``: one the write registers and the principal chose) or a card URL outside
    the principal's namespaces (none when it is bound to no namespace)."""
    if not principal.namespaces:
        return
    if checks_id and not in_namespaces(thing_id, principal.namespaces):
        raise unavailable_id(principal, thing_id)
    if derived is not None and derived.url is not None and not bound:
        raise Forbidden(
            f"The card's URL {derived.url!r} is outside the namespaces of {principal.name!r} "
            f"({', '.join(principal.namespaces)})",
            rule="namespace",
        )


def may_take_over(principal: Principal | None, holder: Holder, derived: DerivedId | None) -> bool:
    """Whether registering the id takes it from ``holder``: the principal is bound to what the id was derived
    from, and the holder, another owner, was not (nor given it by an admin)."""
    if principal is None or principal.is_admin or derived is None or holder.rightful:
        return False
    return (holder.owner, holder.tenant) != (principal.owner, principal.tenant) and derived.binds(principal)


def _refuse_holder(principal: Principal, thing_id: str, holder: Holder, *, creates: bool) -> None:
    """The refusal of a write to an id another owner holds, as far as ``principal`` may know of it."""
    if not may_see(principal, holder.tenant):
        if not creates:
            raise not_found(thing_id)
        # A create cannot take the id; it is refused as an id outside the namespaces is, naming no one.
        raise unavailable_id(principal, thing_id)
    if holder.owner is None:
        raise Forbidden(
            f"{thing_id!r} has no owner (it was registered while authentication was off); only an admin may "
            "change it or transfer it to an owner",
            rule="owner",
        )
    if holder.lapses is not None:
        raise Forbidden(
            f"The registration of {thing_id!r} expired; until {holder.lapses.isoformat(timespec='seconds')} only "
            f"its owner {holder.owner!r} (or an admin) may register it again",
            rule="owner",
        )
    raise Forbidden(
        f"{thing_id!r} is owned by {holder.owner!r}; only its owner or an admin may change it", rule="owner"
    )


def _check_vendor(principal: Principal, document: dict[str, Any] | None) -> None:
    if not principal.vendors or document is None:
        return
    allowed = {name.casefold() for name in principal.vendors}
    for vendor in vendor_names(document):
        if vendor.casefold() not in allowed:
            raise Forbidden(
                f"The description names the vendor {vendor!r}; {principal.name!r} may only register for "
                f"{', '.join(principal.vendors)}",
                rule="vendor",
            )


#: How an admin names the new owner of a transfer.
OWNER_SYNTAX = "key:<owner name> (API keys) or jwt:<issuer>|<owner claim> (access tokens)"


def parse_owner(text: str, issuer: str) -> str:
    """The canonical owner identity an admin names in a transfer (``key:team-b``, ``jwt:<issuer>|<name>``); 400
    unless it is one of those forms with a non-empty name, and for tokens of ``issuer`` (the configured one, so
    that a typing error does not give a description to nobody)."""
    text = text.strip()

    def refuse(reason: str) -> BadRequest:
        return BadRequest(
            f"The new owner {text!r} {reason}; name it as {OWNER_SYNTAX}",
            invalidParams=[{"name": "owner", "reason": reason}],
        )

    if text.startswith(KEY_PREFIX):
        name = text.removeprefix(KEY_PREFIX)
        if not name.strip():
            raise refuse("has an empty name")
        return text
    if not text.startswith(TOKEN_PREFIX):
        raise refuse("does not say where the owner comes from")
    escaped, separator, name = text.removeprefix(TOKEN_PREFIX).partition(ISSUER_END)
    if not separator or not name.strip():
        raise refuse("names no issuer and name separated by '|'")
    named_issuer = unescape_issuer(escaped)
    if not issuer or named_issuer != issuer:
        accepted = f"only those of {escape_issuer(issuer)!r}" if issuer else "none"
        raise refuse(f"names tokens of the issuer {named_issuer!r}; this directory accepts {accepted}")
    return identity(named_issuer, name)


__all__ = [
    "OWNER_SYNTAX",
    "DerivedId",
    "Grant",
    "Holder",
    "authorize_write",
    "ensure_visible",
    "in_namespaces",
    "may_see",
    "may_take_over",
    "not_found",
    "parse_owner",
    "unavailable_id",
]
