"""Kept versions (``thing_versions``): immutable, they outlive their description, so that the history of an id can
still be compared. Read for ``/versions``, and at write time by the version policy."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Text, any_, bindparam, cast, delete, exists, func, select
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from registry.store.database import Statement
from registry.store.tables import changes, of_tenant, thing_versions
from registry.tenancy import TenantScope

_VERSION_COLUMNS = (
    thing_versions.c.version,
    thing_versions.c.document_text,
    thing_versions.c.registered,
    thing_versions.c.revision,
    thing_versions.c.previous_version,
    thing_versions.c.compatibility,
    select(changes.c.actor).where(changes.c.seq == thing_versions.c.revision).scalar_subquery(),
)

VERSION_TEXT = Statement.of(
    select(thing_versions.c.document_text).where(
        thing_versions.c.thing_id == bindparam("thing_id"), thing_versions.c.version == bindparam("version")
    )
)
KEEP_VERSION = Statement.of(
    pg_insert(thing_versions)
    .values(
        thing_id=bindparam("thing_id"),
        version=bindparam("version"),
        document_text=bindparam("document_text"),
        registered=func.now(),
        revision=bindparam("revision"),
        previous_version=bindparam("previous_version", type_=Text),
        compatibility=cast(bindparam("compatibility", type_=Text), JSONB),
    )
    .on_conflict_do_nothing(index_elements=[thing_versions.c.thing_id, thing_versions.c.version])
)
#: The versions kept for a batch of ids, each with the tenant of the change that registered it.
KEPT = Statement.of(
    select(
        thing_versions.c.thing_id,
        thing_versions.c.version,
        # The tenant of the change that registered it: whose writers the version is compared for.
        select(changes.c.tenant).where(changes.c.seq == thing_versions.c.revision).scalar_subquery(),
    ).where(thing_versions.c.thing_id == any_(bindparam("ids", type_=ARRAY(Text))))
)
FORGET = Statement.of(
    delete(thing_versions).where(thing_versions.c.thing_id == any_(bindparam("ids", type_=ARRAY(Text))))
)
_WANTED = (
    func.unnest(bindparam("ids", type_=ARRAY(Text)), bindparam("versions", type_=ARRAY(Text)))
    .table_valued("thing_id", "version")
    .render_derived(name="wanted")
)
#: The texts of a batch of (id, version) pairs.
KEPT_TEXTS = Statement.of(
    select(thing_versions.c.thing_id, thing_versions.c.version, thing_versions.c.document_text).join_from(
        _WANTED,
        thing_versions,
        (thing_versions.c.thing_id == _WANTED.c.thing_id) & (thing_versions.c.version == _WANTED.c.version),
    )
)


def _registered_for(readers: TenantScope) -> tuple[ColumnElement[bool], ...]:
    """Kept versions are their registrant's tenant's: a version is seen by the readers of the tenant of the change
    that registered it (the change log keeps it after the description is deleted, and when another tenant takes
    the id later)."""
    if readers.everything:
        return ()
    registered_in = select(changes.c.seq).where(
        changes.c.seq == thing_versions.c.revision, of_tenant(changes.c.tenant, readers.tenant)
    )
    return (exists(registered_in),)


def versions_query(thing_id: str, readers: TenantScope) -> Any:
    """The kept versions of ``thing_id`` that ``readers`` may see, as :class:`VersionRow` columns."""
    return select(*_VERSION_COLUMNS).where(thing_versions.c.thing_id == thing_id, *_registered_for(readers))


def version_query(thing_id: str, version: str, readers: TenantScope) -> Any:
    return select(*_VERSION_COLUMNS).where(
        thing_versions.c.thing_id == thing_id, thing_versions.c.version == version, *_registered_for(readers)
    )


__all__ = ["FORGET", "KEEP_VERSION", "KEPT", "KEPT_TEXTS", "VERSION_TEXT", "version_query", "versions_query"]
