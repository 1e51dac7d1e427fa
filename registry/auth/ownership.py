"""Who may write which description: the one check every write of the directory goes through.

``authorize_write`` is called under the id's lock with what is there now (its owner) and what would be stored, by
the directory service for PUT, POST, PATCH, DELETE, lease renewals and tool imports (and by any other publisher,
such as an MCP front end). Rules, each named in the 403 it causes:

- ``owner``: an existing description may be changed only by its owner or an admin (one without an owner, stored
  while authentication was off, only by an admin, who may transfer it);
- ``namespace``: a principal bound to id patterns may only register (create) ids matching one of them, and no
  principal may create an id held by a description it cannot see (another tenant's): both answer alike;
- ``vendor``: a principal bound to vendor names may only register descriptions whose ``lmos:vendor`` name is one
  of them (what stops a team registering agents in another vendor's name).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from registry.auth.principal import Principal
from registry.descriptions.summary import vendor_of
from registry.errors import Forbidden


@functools.lru_cache(maxsize=1024)
def _pattern(namespace: str) -> re.Pattern[str]:
    """``*`` matches any run of characters (``/`` and ``:`` included); everything else literally."""
    return re.compile(".*".join(re.escape(part) for part in namespace.split("*")), re.DOTALL)


def in_namespaces(thing_id: str, namespaces: tuple[str, ...]) -> bool:
    return any(_pattern(namespace).fullmatch(thing_id) for namespace in namespaces)


def vendor_name(document: dict[str, Any]) -> str | None:
    vendor = vendor_of(document)
    return vendor.name if vendor is not None else None


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


def authorize_write(
    principal: Principal | None,
    thing_id: str,
    document: dict[str, Any] | None,
    *,
    exists: bool,
    owner: str | None,
    assigned_id: bool = False,
) -> None:
    """Raise ``Forbidden`` unless ``principal`` may write ``document`` (None: a delete or renewal) at ``thing_id``.

    ``exists`` and ``owner`` describe the current description; ``assigned_id`` is true for ids the directory chose
    (anonymous registrations, derived tool ids), which no namespace rule applies to. Without a principal
    (authentication off) everything is allowed.
    """
    if principal is None or principal.is_admin:
        return
    if exists and owner != principal.owner:
        raise Forbidden(
            f"{thing_id!r} is owned by {owner!r}; only its owner or an admin may change it"
            if owner is not None
            else f"{thing_id!r} has no owner (it was registered while authentication was off); only an admin may "
            "change it or transfer it to an owner",
            rule="owner",
        )
    if not exists and principal.namespaces and not assigned_id and not in_namespaces(thing_id, principal.namespaces):
        raise unavailable_id(principal, thing_id)
    if principal.vendors and document is not None:
        vendor = vendor_name(document)
        allowed = {name.casefold() for name in principal.vendors}
        if vendor is not None and vendor.casefold() not in allowed:
            raise Forbidden(
                f"The description names the vendor {vendor!r}; {principal.name!r} may only register for "
                f"{', '.join(principal.vendors)}",
                rule="vendor",
            )


__all__ = ["authorize_write", "in_namespaces", "unavailable_id", "vendor_name"]
