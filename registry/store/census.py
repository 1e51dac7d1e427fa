"""What an operator watches (``/metrics``, the dashboard): live descriptions by kind, leases about to expire or
expired and not yet purged, and the quality of what is registered (lint warnings, breaking or dishonest bumps).

The lists a reader sees are scoped by tenant (registry/auth/tenancy.py): ``everything`` or the shared rows and
those of ``tenant``, as bound parameters of one prepared statement each."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Boolean, Interval, Text, and_, bindparam, case, func, literal_column, or_, select

from registry.auth.tenancy import TenantScope
from registry.store.database import Executor, Record, Statement
from registry.store.tables import changes, descriptions, live, of_tenant, thing_summaries, thing_versions
from registry.store.things import THING_TRANSFERRED

_BY_KIND = Statement.of(
    select(thing_summaries.c.kind, func.count())
    .select_from(thing_summaries.join(descriptions, descriptions.c.id == thing_summaries.c.thing_id))
    .where(live())
    .group_by(thing_summaries.c.kind)
)
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
_WITH_LINT = Statement.of(
    select(
        thing_summaries.c.thing_id,
        thing_summaries.c.title,
        thing_summaries.c.kind,
        thing_summaries.c.summary["lint"].label("lint"),
    )
    .select_from(thing_summaries.join(descriptions, descriptions.c.id == thing_summaries.c.thing_id))
    .where(live(), _LINT_COUNT > 0, _seen(descriptions.c.tenant))
    .order_by(_LINT_COUNT.desc(), thing_summaries.c.thing_id)
    .limit(bindparam("limit"))
)
_verdict = thing_versions.c.compatibility["verdict"].astext
_honest = thing_versions.c.compatibility["honest"].astext
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
    .select_from(
        thing_versions.outerjoin(thing_summaries, thing_summaries.c.thing_id == thing_versions.c.thing_id)
        # The change that registered the version knows its tenant, also once the description is gone.
        .outerjoin(changes, changes.c.seq == thing_versions.c.revision)
    )
    .where(or_(_verdict == "breaking", _honest == "false"), _seen(changes.c.tenant))
    .order_by(thing_versions.c.registered.desc(), thing_versions.c.thing_id)
    .limit(bindparam("limit"))
)
_RECENT_CHANGES = Statement.of(
    select(
        changes.c.seq,
        changes.c.type,
        changes.c.thing_id,
        changes.c.at,
        changes.c.actor,
        *(
            case((changes.c.type == THING_TRANSFERRED, changes.c.diff[end].astext)).label(f"transferred_{end}")
            for end in ("from", "to")
        ),
    )
    .where(_seen(changes.c.tenant))
    .order_by(changes.c.seq.desc())
    .limit(bindparam("limit"))
)


async def descriptions_by_kind(executor: Executor) -> dict[str, int]:
    """Live descriptions per kind (agent, tool, thing)."""
    return {row[0]: int(row[1]) for row in await executor.fetch(_BY_KIND)}


async def leases_expiring(executor: Executor, within: dt.timedelta) -> int:
    """Live descriptions whose lease ends within ``within`` unless renewed."""
    return int(await executor.fetchval(_EXPIRING, within=within))


async def expired_awaiting_purge(executor: Executor) -> int:
    """Descriptions past their expiry that the next purge removes (never served meanwhile)."""
    return int(await executor.fetchval(_EXPIRED))


async def with_lint_warnings(executor: Executor, limit: int, readers: TenantScope) -> list[Record]:
    """Live descriptions with lint warnings, the most warned first: (thing_id, title, kind, lint)."""
    return await executor.fetch(_WITH_LINT, limit=limit, **_readers(readers))


async def questionable_bumps(executor: Executor, limit: int, readers: TenantScope) -> list[Record]:
    """Kept versions that broke compatibility or whose version number misstates the change, newest first."""
    return await executor.fetch(_QUESTIONABLE_BUMPS, limit=limit, **_readers(readers))


async def recent_changes(executor: Executor, limit: int, readers: TenantScope) -> list[Record]:
    """The newest entries of the change log ``readers`` may see, newest first: (seq, type, thing_id, at, actor,
    transferred_from, transferred_to), the last two the owners of a transfer."""
    return await executor.fetch(_RECENT_CHANGES, limit=limit, **_readers(readers))


__all__ = [
    "descriptions_by_kind",
    "expired_awaiting_purge",
    "leases_expiring",
    "questionable_bumps",
    "recent_changes",
    "with_lint_warnings",
]
