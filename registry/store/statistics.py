"""Planner statistics kept fresh: after a bulk load the planner must know the tables' new sizes and value spreads,
or it picks plans for the empty catalogue, and a filtered search of a large catalogue is many times slower until
``ANALYZE`` (docs/performance.md). Autovacuum gets there eventually; the directory does not wait for it."""

from __future__ import annotations

from sqlalchemy import text

from registry.store.database import Executor

#: The tables the plans of search, discovery, the version policy and the change feed depend on.
TABLES = ("descriptions", "thing_summaries", "thing_capabilities", "description_rdf", "thing_versions", "changes")
#: Tables whose queries read rows from covering indexes alone (capability resolution: the offers of a capability,
#: see catalog._bound_offers): those are vacuumed too, which marks their pages all-visible. Before that every row
#: an index-only scan meets is looked up in the table, and the planner, knowing it, scans the table instead.
READ_FROM_INDEXES = ("thing_capabilities",)
#: Rows changed since the last ANALYZE, as a share of a table's rows, that call for a new one (and at least 50, as
#: autovacuum's own base threshold): a small directory loaded at once gets the word frequencies its need search
#: weighs words by within a round, and an ANALYZE of a small table costs little.
STALE_SHARE = 0.1
STALE_MINIMUM = 50

_MERGE_GIN_PENDING = text(
    "SELECT gin_clean_pending_list(index.indexrelid) FROM pg_index AS index "
    "JOIN pg_class AS relation ON relation.oid = index.indexrelid JOIN pg_am AS method ON method.oid = relation.relam "
    "WHERE method.amname = 'gin' AND index.indrelid::regclass::text = ANY(:tables)"
)
_STALE = text(
    "SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(:tables) "
    "AND n_mod_since_analyze > greatest(:minimum, :share * n_live_tup)"
)


async def refresh_statistics(executor: Executor, tables: tuple[str, ...] = TABLES) -> None:
    """ANALYZE ``tables`` now (after a bulk load; VACUUM those ``READ_FROM_INDEXES`` too, so ``executor`` must
    not be in a transaction), and merge the pending entries of every GIN index, whether or not its table is among
    them: rows written since the last VACUUM wait in an unsorted list each search reads through (a vendor filter is
    several times slower until they are merged), and autovacuum's own ANALYZE, which may come first and leave a table
    looking fresh, does not merge them. Cheap when the lists are empty."""
    for table in tables:
        if table not in READ_FROM_INDEXES:
            await executor.execute(text(f"ANALYZE {table}"))
    await executor.fetch(_MERGE_GIN_PENDING, tables=list(TABLES))
    for table in tables:
        if table in READ_FROM_INDEXES:
            # Last, as the longest; skipped (until the next refresh) while another replica or autovacuum holds it.
            await executor.execute(text(f"VACUUM (ANALYZE, SKIP_LOCKED) {table}"))


async def refresh_stale_statistics(executor: Executor) -> list[str]:
    """ANALYZE (or VACUUM, see ``refresh_statistics``) the tables that changed much since their last ANALYZE;
    returns their names."""
    stale = [
        row[0] for row in await executor.fetch(_STALE, tables=list(TABLES), minimum=STALE_MINIMUM, share=STALE_SHARE)
    ]
    await refresh_statistics(executor, tuple(stale))
    return stale


__all__ = ["READ_FROM_INDEXES", "TABLES", "refresh_stale_statistics", "refresh_statistics"]
