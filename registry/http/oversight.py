"""``GET /api/v1/quality`` (descriptions with lint warnings, breaking or dishonest version bumps) and
``GET /api/v1/changes`` (the latest changes, for a page that shows them before following ``/events``); both show
only the descriptions the caller may read (registry/auth/tenancy.py)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get
from litestar.di import NamedDependency
from litestar.params import Parameter, QueryParameter

from registry.discovery.oversight import OversightService
from registry.http.access import tenant_scope_of
from registry.wire import QualityReport, RecentChanges


@get(
    "/api/v1/quality",
    operation_id="quality",
    summary="Descriptions with lint warnings; kept versions that broke compatibility or misstate their bump",
    tags=["Discovery"],
)
async def quality(
    request: Request[Any, Any, Any],
    oversight: NamedDependency[OversightService],
    limit: Annotated[int, Parameter(ge=1, le=1000, description="Entries per list, the worst first")] = 100,
) -> QualityReport:
    return await oversight.report(limit, tenant_scope_of(request))


@get(
    "/api/v1/changes",
    operation_id="recentChanges",
    summary="The latest entries of the change log, newest first; follow on with /events?lastEventId=<newest seq>",
    tags=["Discovery"],
)
async def recent_changes(
    request: Request[Any, Any, Any],
    oversight: NamedDependency[OversightService],
    limit: Annotated[int, Parameter(ge=1, le=1000, description="How many of the latest changes")] = 50,
    thing_id: Annotated[
        str | None,
        QueryParameter(
            name="id", description="Only the changes of this description, each update with the members it changed"
        ),
    ] = None,
) -> RecentChanges:
    return await oversight.recent_changes(limit, tenant_scope_of(request), thing_id)


__all__ = ["quality", "recent_changes"]
