"""Who may write which description: the one check every write of the directory goes through.

``authorize_write`` is called under the id's lock with what is there now (its owner) and what would be stored, by
the directory service for PUT, POST, PATCH, DELETE, lease renewals and tool imports (and by any other publisher,
such as an MCP front end). Rules, each named in the 403 it causes:

- ``owner``: an existing description may be changed only by its owner or an admin (one without an owner, stored
  while authentication was off, only by an admin, who may transfer it);
- ``namespace``: a principal bound to id patterns may only register (create) ids matching one of them;
- ``vendor``: a principal bound to vendor names may only register descriptions whose ``lmos:vendor`` names are all
  among them (what stops a team registering agents in another vendor's name), the names read by what the keys
  expand to in the description's JSON-LD context, as SPARQL reads them.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from registry.auth.principal import Principal
from registry.descriptions.summary import vendor_names
from registry.errors import Forbidden


@functools.lru_cache(maxsize=1024)
def _pattern(namespace: str) -> re.Pattern[str]:
    """``*`` matches any run of characters (``/`` and ``:`` included); everything else literally."""
    return re.compile(".*".join(re.escape(part) for part in namespace.split("*")), re.DOTALL)


def in_namespaces(thing_id: str, namespaces: tuple[str, ...]) -> bool:
    return any(_pattern(namespace).fullmatch(thing_id) for namespace in namespaces)


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
        raise Forbidden(
            f"The id {thing_id!r} is outside the namespaces of {principal.name!r} ({', '.join(principal.namespaces)})",
            rule="namespace",
        )
    if principal.vendors and document is not None:
        allowed = {name.casefold() for name in principal.vendors}
        for vendor in vendor_names(document):
            if vendor.casefold() not in allowed:
                raise Forbidden(
                    f"The description names the vendor {vendor!r}; {principal.name!r} may only register for "
                    f"{', '.join(principal.vendors)}",
                    rule="vendor",
                )


__all__ = ["authorize_write", "in_namespaces"]
