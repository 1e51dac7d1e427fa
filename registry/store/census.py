"""What an operator watches (``/metrics``, the dashboard): live descriptions by kind, leases about to expire or
expired and not yet purged, and the quality of what is registered (lint warnings, breaking or dishonest bumps).

The lists a reader sees are scoped by tenant (registry/auth/tenancy.py): ``everything`` or the shared rows and
those of ``tenant``, as bound parameters of one prepared statement each."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Boolean, Interval, Text, and_, bindparam, case, func, literal_column, or_, select

from registry.store.counts import BY_KIND
from registry.store.database import Executor, Record, Statement
from registry.store.tables import changes, descriptions, live, of_tenant, thing_summaries, thing_versions
from registry.store.things import THING_DELETED, THING_TRANSFERRED, THING_UPDATED
from registry.tenancy import TenantScope

_EXPIRING = Statement.of(
    select(func.count())
    .select_from(descriptions)
    .where(
        and_(
            descriptions.c.expires > func.now(),
            descriptions.c.expires <= func.now() + bindparam("within", type_=Interval()),
        )
    )
)

_EXPIRED = Statement.of(select(func.count()).select_from(descriptions).where(descriptions.c.expires <= func.now()))


def _seen(tenant: Any) -> Any:
    """Rows whose ``tenant`` column the statement's reader (parameters ``everything``, ``tenant``) may see."""
    return or_(bindparam("everything", type_=Boolean), of_tenant(tenant, bindparam("tenant", type_=Text)))


def _readers(readers: TenantScope) -> dict[str, Any]:
    return {"everything": readers.everything, "tenant": readers.tenant}


_LINT_COUNT: Any = func.jsonb_array_length(
    func.coalesce(thing_summaries.c.summary["lint"], literal_column("'[]'::jsonb"))
)
_LINTED = thing_summaries.join(descriptions, descriptions.c.id == thing_summaries.c.thing_id)
_LINTED_WHERE = (live(), _LINT_COUNT > 0, _seen(descriptions.c.tenant))
_WITH_LINT = Statement.of(
    select(
        thing_summaries.c.thing_id,
        thing_summaries.c.title,
        thing_summaries.c.kind,
        thing_summaries.c.summary["lint"].label("lint"),
    )
    .select_from(_LINTED)
    .where(*_LINTED_WHERE)
    .order_by(_LINT_COUNT.desc(), thing_summaries.c.thing_id)
    .limit(bindparam("limit"))
)
_WITH_LINT_COUNT = Statement.of(select(func.count()).select_from(_LINTED).where(*_LINTED_WHERE))
_verdict = thing_versions.c.compatibility["verdict"].astext
_honest = thing_versions.c.compatibility["honest"].astext
_BUMPED = thing_versions.outerjoin(
    thing_summaries, thing_summaries.c.thing_id == thing_versions.c.thing_id
).outerjoin(  # the change that registered the version knows its tenant, also once the description is gone
    changes, changes.c.seq == thing_versions.c.revision
)
_BUMPED_WHERE = (or_(_verdict == "breaking", _honest == "false"), _seen(changes.c.tenant))
_QUESTIONABLE_BUMPS = Statement.of(
    select(
        thing_versions.c.thing_id,
        thing_summaries.c.title,
        thing_versions.c.version,
        thing_versions.c.previous_version,
        _verdict.label("verdict"),
        _honest.label("honest"),
        thing_versions.c.registered,
    )
    .select_from(_BUMPED)
    .where(*_BUMPED_WHERE)
    .order_by(thing_versions.c.registered.desc(), thing_versions.c.thing_id)
    .limit(bindparam("limit"))
)
_QUESTIONABLE_BUMPS_COUNT = Statement.of(select(func.count()).select_from(_BUMPED).where(*_BUMPED_WHERE))
_CHANGE_COLUMNS = (
    changes.c.seq,
    changes.c.type,
    changes.c.thing_id,
    changes.c.at,
    changes.c.actor,
    *(
        case((changes.c.type == THING_TRANSFERRED, changes.c.diff[end].astext)).label(f"transferred_{end}")
        for end in ("from", "to")
    ),
    # Why a description went: ``expired`` when the purge removed it (a delete by a principal has no reason).
    case((changes.c.type == THING_DELETED, changes.c.diff["reason"].astext)).label("reason"),
)
_RECENT_CHANGES = Statement.of(
    select(*_CHANGE_COLUMNS).where(_seen(changes.c.tenant)).order_by(changes.c.seq.desc()).limit(bindparam("limit"))
)
#: Most members named as changed by one update.
MAX_CHANGED = 50
#: What an update changed, read from its merge patch in the database (a patch may be megabytes): the JSON Pointers
#: of its members two levels deep (``/title``, ``/properties/temperature``), sorted; not the ``id`` every stored
#: patch carries.
_CHANGED_MEMBERS: Any = literal_column(
    f"""CASE WHEN changes.type = '{THING_UPDATED}' AND jsonb_typeof(changes.diff) = 'object' THEN ARRAY(
        SELECT '/' || replace(replace(top.key, '~', '~0'), '/', '~1')
            || coalesce('/' || replace(replace(nested.key, '~', '~0'), '/', '~1'), '')
        FROM jsonb_each(changes.diff) AS top
        LEFT JOIN LATERAL (
            SELECT jsonb_object_keys(top.value) AS key WHERE jsonb_typeof(top.value) = 'object'
        ) AS nested ON true
        WHERE top.key <> 'id'
        ORDER BY 1 LIMIT {MAX_CHANGED}
    ) END"""
)
#: The changes of one description, newest first, with the members each update changed.
_CHANGES_OF = Statement.of(
    select(*_CHANGE_COLUMNS, _CHANGED_MEMBERS.label("changed"))
    .where(changes.c.thing_id == bindparam("thing_id", type_=Text), _seen(changes.c.tenant))
    .order_by(changes.c.seq.desc())
    .limit(bindparam("limit"))
)


async def descriptions_by_kind(executor: Executor) -> dict[str, int]:
    """Live descriptions per kind (agent, tool, thing), from the counts kept with the writes."""
    return {row[0]: int(row[1]) for row in await executor.fetch(BY_KIND)}


async def leases_expiring(executor: Executor, within: dt.timedelta) -> int:
    """Live descriptions whose lease ends within ``within`` unless renewed."""
    return int(await executor.fetchval(_EXPIRING, within=within))


async def expired_awaiting_purge(executor: Executor) -> int:
    """Descriptions past their expiry that the next purge removes (never served meanwhile)."""
    return int(await executor.fetchval(_EXPIRED))


async def with_lint_warnings(executor: Executor, limit: int, readers: TenantScope) -> list[Record]:
    """Live descriptions with lint warnings, the most warned first: (thing_id, title, kind, lint)."""
    return await executor.fetch(_WITH_LINT, limit=limit, **_readers(readers))


async def count_with_lint_warnings(executor: Executor, readers: TenantScope) -> int:
    """How many live descriptions ``readers`` see have lint warnings (all of them, not a page)."""
    return int(await executor.fetchval(_WITH_LINT_COUNT, **_readers(readers)))


async def questionable_bumps(executor: Executor, limit: int, readers: TenantScope) -> list[Record]:
    """Kept versions that broke compatibility or whose version number misstates the change, newest first."""
    return await executor.fetch(_QUESTIONABLE_BUMPS, limit=limit, **_readers(readers))


async def count_questionable_bumps(executor: Executor, readers: TenantScope) -> int:
    """How many kept versions ``readers`` see broke compatibility or misstate their bump (all of them)."""
    return int(await executor.fetchval(_QUESTIONABLE_BUMPS_COUNT, **_readers(readers)))


async def recent_changes(executor: Executor, limit: int, readers: TenantScope) -> list[Record]:
    """The newest entries of the change log ``readers`` may see, newest first: (seq, type, thing_id, at, actor,
    transferred_from, transferred_to, reason), the owners of a transfer and why a description went."""
    return await executor.fetch(_RECENT_CHANGES, limit=limit, **_readers(readers))


async def changes_of(executor: Executor, thing_id: str, limit: int, readers: TenantScope) -> list[Record]:
    """The newest changes of one description ``readers`` may see, newest first: the columns of
    ``recent_changes``, then ``changed``, the members an update changed (JSON Pointers)."""
    return await executor.fetch(_CHANGES_OF, thing_id=thing_id, limit=limit, **_readers(readers))


__all__ = [
    "changes_of",
    "count_questionable_bumps",
    "count_with_lint_warnings",
    "descriptions_by_kind",
    "expired_awaiting_purge",
    "leases_expiring",
    "questionable_bumps",
    "recent_changes",
    "with_lint_warnings",
]
