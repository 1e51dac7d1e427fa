"""What an operator oversees beyond the counts: the quality of what is registered (descriptions with lint warnings,
breaking or dishonest version bumps) and the latest changes (the dashboard shows them on load)."""

from __future__ import annotations

import msgspec

from registry.auth.tenancy import TenantScope
from registry.store.census import (
    changes_of,
    count_questionable_bumps,
    count_with_lint_warnings,
    questionable_bumps,
    recent_changes,
    with_lint_warnings,
)
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
        # A full page may be part of the list: count the rest (a short page is the whole list).
        lint_total = await count_with_lint_warnings(self.database, readers) if len(linted) >= limit else len(linted)
        bumps_total = await count_questionable_bumps(self.database, readers) if len(bumps) >= limit else len(bumps)
        return QualityReport(
            lint_total=lint_total,
            bumps_total=bumps_total,
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

    async def recent_changes(self, limit: int, readers: TenantScope, thing_id: str | None = None) -> RecentChanges:
        """The latest changes, of every description or of ``thing_id`` only (then with what each update changed)."""
        if thing_id is None:
            rows = await recent_changes(self.database, limit, readers)
        else:
            rows = await changes_of(self.database, thing_id, limit, readers)
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
                    reason=row["reason"],
                    changed=None if thing_id is None else row["changed"],
                )
                for row in rows
            ]
        )


__all__ = ["OversightService"]
