"""What an operator oversees beyond the counts: the quality of what is registered (descriptions with lint warnings,
breaking or dishonest version bumps) and the latest changes (the dashboard shows them on load)."""

from __future__ import annotations

import msgspec

from registry.auth.tenancy import TenantScope
from registry.store.census import questionable_bumps, recent_changes, with_lint_warnings
from registry.store.database import Database
from registry.wire import (
    LintedDescription,
    LintWarning,
    QualityReport,
    QuestionableBump,
    RecentChange,
    RecentChanges,
)

_HONEST = {"true": True, "false": False}


class OversightService:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def report(self, limit: int, readers: TenantScope) -> QualityReport:
        linted = await with_lint_warnings(self.database, limit, readers)
        bumps = await questionable_bumps(self.database, limit, readers)
        return QualityReport(
            lint=[
                LintedDescription(
                    id=row["thing_id"],
                    title=row["title"],
                    kind=row["kind"],
                    warnings=msgspec.convert(row["lint"], list[LintWarning]),
                )
                for row in linted
            ],
            bumps=[
                QuestionableBump(
                    id=row["thing_id"],
                    title=row["title"],
                    version=row["version"],
                    previous_version=row["previous_version"],
                    verdict=row["verdict"],
                    honest=_HONEST.get(row["honest"]),
                    registered=row["registered"],
                )
                for row in bumps
            ],
        )

    async def recent_changes(self, limit: int, readers: TenantScope) -> RecentChanges:
        rows = await recent_changes(self.database, limit, readers)
        return RecentChanges(
            items=[
                RecentChange(
                    seq=row["seq"],
                    type=row["type"],
                    id=row["thing_id"],
                    at=row["at"],
                    actor=row["actor"],
                    transferred_from=row["transferred_from"],
                    transferred_to=row["transferred_to"],
                )
                for row in rows
            ]
        )


__all__ = ["OversightService"]
