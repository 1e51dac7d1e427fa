"""The catalog projection: each description's summary, capabilities and (for a new version) its kept version with
the compatibility report against the version before it, for search, facets, resolution and ``/versions``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from registry.descriptions.compatibility import compare_documents
from registry.descriptions.lint import lint
from registry.descriptions.summary import SEARCH_TEXTS, Summary, summarise
from registry.descriptions.versions import previous_version
from registry.store.catalog import CapabilityRow, CatalogStore, NewVersion, SummaryRow, SummaryWrite
from registry.store.database import Transaction
from registry.store.things import StoredDescription
from registry.wire import LintWarning, Notice


class CatalogProjection:
    def __init__(self, document: dict[str, Any], summary: Summary, warnings: list[LintWarning]) -> None:
        self.document = document
        self.summary = summary
        self.warnings = warnings
        self.notices: Sequence[Notice] = [
            Notice(code=f"lint:{item.code}", message=item.message, field=item.field) for item in warnings
        ]

    def write(self, stored: StoredDescription) -> SummaryWrite:
        summary = self.summary
        stored_summary = msgspec.to_builtins(summary)
        stored_summary["lint"] = msgspec.to_builtins(self.warnings)
        return SummaryWrite(
            SummaryRow(
                thing_id=stored.id,
                kind=summary.kind,
                title=summary.title,
                vendor_name=summary.vendor.name if summary.vendor else None,
                version=summary.version,
                types=summary.types,
                summary_json=msgspec.json.encode(stored_summary).decode(),
                search_texts=summary.search_texts(),
                search_version=SEARCH_TEXTS,
            ),
            [CapabilityRow(item.source, item.id, item.name, item.version) for item in summary.capabilities],
            first_version=(
                None if summary.version is None else NewVersion(summary.version, stored.document_text, stored.revision)
            ),
        )

    async def keep_version(self, tx: Transaction, thing_id: str, version: NewVersion, kept: list[str]) -> None:
        """Keep a new version of a description that has others, with its compatibility report against the version
        before it."""
        previous = previous_version(kept, version.version)
        report = None
        if previous is not None:
            old = msgspec.json.decode(await CatalogStore.version_text(tx, thing_id, previous))
            report = compare_documents(old, self.document, previous, version.version)
        await CatalogStore.keep_version(
            tx, thing_id, version, previous, None if report is None else msgspec.json.encode(report).decode()
        )


class CatalogProjector:
    def project(self, thing_id: str, document: dict[str, Any]) -> CatalogProjection:
        summary = summarise(document)
        return CatalogProjection(document, summary, lint(document, summary))

    @staticmethod
    async def store(tx: Transaction, written: Sequence[tuple[CatalogProjection, StoredDescription]]) -> None:
        writes = [projection.write(stored) for projection, stored in written]
        kept_before = await CatalogStore.write_summaries(tx, writes)
        # The first version of a description was kept by write_summaries; a later new one is compared first.
        for (projection, stored), write, kept in zip(written, writes, kept_before, strict=True):
            version = write.first_version
            if version is not None and kept and version.version not in kept:
                await projection.keep_version(tx, stored.id, version, kept)

    async def remove(self, tx: Transaction, thing_ids: Sequence[str]) -> None:
        await CatalogStore.remove(tx, thing_ids)


__all__ = ["CatalogProjection", "CatalogProjector"]
