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
#: Descriptions the count of owners per word samples (``TABLESAMPLE SYSTEM``: whole pages, so about as many): its
#: cost follows this, not the catalogue (docs/performance.md).
OWNER_SAMPLE_ROWS = 1000
#: The seed of that sample: the same pages of the same table at each count.
OWNER_SAMPLE_SEED = 17
#: The table the owner counts are written to, named among the refreshed statistics when it alone is refreshed.
WORD_OWNERS = "word_owner_shares"
#: Which row of ``pg_stats`` (as ``stats``) holds the summaries' words column: the frequent lexemes the need search
#: weighs words by (registry/store/catalog/words.py) and whose owners are counted here.
WORDS_STATISTICS = (
    "stats.tablename = 'thing_summaries' AND stats.attname = 'search' "
    "AND stats.schemaname = current_schema() AND NOT stats.inherited"
)

_MERGE_GIN_PENDING = text(
    "SELECT gin_clean_pending_list(index.indexrelid) FROM pg_index AS index "
    "JOIN pg_class AS relation ON relation.oid = index.indexrelid JOIN pg_am AS method ON method.oid = relation.relam "
    "WHERE method.amname = 'gin' AND index.indrelid::regclass::text = ANY(:tables)"
)
_STALE = text(
    "SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(:tables) "
    "AND n_mod_since_analyze > greatest(:minimum, :share * n_live_tup)"
)


_SAMPLE_PERCENT = text(
    "SELECT CASE WHEN reltuples > :rows THEN 100.0 * :rows / reltuples ELSE 100.0 END "
    "FROM pg_class WHERE oid = 'thing_summaries'::regclass"
)
#: Per lexeme pg_stats lists for the words column, the distinct owners holding it among the descriptions of a page
#: sample, over the distinct owners in the sample. Each sampled summary's owner is looked up by its id (a join
#: would be planned as a scan of every description). An owner is an owner identity in its tenant; descriptions
#: registered with authentication off (no owner) are one owner. A listed lexeme the sample misses counts as held by
#: one owner, so that a directory of one owner has every share 1.
_COUNT_WORD_OWNERS = text(
    f"""
    WITH listed AS (
        SELECT DISTINCT listed.lexeme
        FROM pg_stats AS stats, unnest(stats.most_common_elems::text::text[]) AS listed (lexeme)
        WHERE {WORDS_STATISTICS}
    ),
    sampled AS MATERIALIZED (
        SELECT summary.search,
               (SELECT CASE WHEN party.owner IS NULL THEN ARRAY[]::text[] ELSE ARRAY[party.owner, party.tenant] END
                FROM descriptions AS party WHERE party.id = summary.thing_id) AS owner
        FROM thing_summaries AS summary TABLESAMPLE SYSTEM (:percent) REPEATABLE (:seed)
    ),
    pairs AS (
        SELECT DISTINCT word.lexeme, sampled.owner
        FROM sampled CROSS JOIN LATERAL unnest(tsvector_to_array(sampled.search)) AS word (lexeme)
        WHERE word.lexeme IN (SELECT lexeme FROM listed) AND sampled.owner IS NOT NULL
    ),
    held AS (SELECT lexeme, count(*) AS owners FROM pairs GROUP BY lexeme),
    seen AS (SELECT count(DISTINCT owner) AS owners, count(*) AS rows FROM sampled)
    INSERT INTO word_owner_shares AS stored (single, lexemes, shares, owners, sampled, counted)
    SELECT true,
           coalesce(array_agg(listed.lexeme ORDER BY listed.lexeme) FILTER (WHERE listed.lexeme IS NOT NULL),
                    ARRAY[]::text[]),
           coalesce(array_agg(greatest(1, coalesce(held.owners, 0))::float8 / greatest(1, seen.owners)
                              ORDER BY listed.lexeme) FILTER (WHERE listed.lexeme IS NOT NULL), ARRAY[]::float8[]),
           seen.owners, seen.rows, clock_timestamp()
    FROM seen LEFT JOIN (listed LEFT JOIN held ON held.lexeme = listed.lexeme) ON true
    GROUP BY seen.owners, seen.rows
    ON CONFLICT (single) DO UPDATE
    SET lexemes = excluded.lexemes, shares = excluded.shares, owners = excluded.owners,
        sampled = excluded.sampled, counted = excluded.counted
    """
)
#: Whether thing_summaries was analysed (by the refresh or by autovacuum) since the owners were last counted.
_OWNERS_BEHIND = text(
    """
    SELECT greatest(tables.last_analyze, tables.last_autoanalyze)
           > coalesce((SELECT counted FROM word_owner_shares), '-infinity')
    FROM pg_stat_user_tables AS tables
    WHERE tables.relid = 'thing_summaries'::regclass
    """
)


async def count_word_owners(executor: Executor) -> None:
    """Count, for the lexemes pg_stats lists as frequent in the summaries' words, the share of owners holding each,
    from a page sample of about ``OWNER_SAMPLE_ROWS`` descriptions (all of a smaller catalogue)."""
    percent = await executor.fetchval(_SAMPLE_PERCENT, rows=OWNER_SAMPLE_ROWS)
    await executor.execute(_COUNT_WORD_OWNERS, percent=float(percent), seed=OWNER_SAMPLE_SEED)


async def refresh_statistics(executor: Executor, tables: tuple[str, ...] = TABLES) -> None:
    """ANALYZE ``tables`` now (after a bulk load; VACUUM those ``READ_FROM_INDEXES`` too, so ``executor`` must
    not be in a transaction), and merge the pending entries of every GIN index, whether or not its table is among
    them: rows written since the last VACUUM wait in an unsorted list each search reads through (a vendor filter is
    several times slower until they are merged), and autovacuum's own ANALYZE, which may come first and leave a table
    looking fresh, does not merge them. Cheap when the lists are empty."""
    for table in tables:
        if table not in READ_FROM_INDEXES:
            await executor.execute(text(f"ANALYZE {table}"))
        if table == "thing_summaries":
            await count_word_owners(executor)
    await executor.fetch(_MERGE_GIN_PENDING, tables=list(TABLES))
    for table in tables:
        if table in READ_FROM_INDEXES:
            # Last, as the longest; skipped (until the next refresh) while another replica or autovacuum holds it.
            await executor.execute(text(f"VACUUM (ANALYZE, SKIP_LOCKED) {table}"))


async def refresh_stale_statistics(executor: Executor) -> list[str]:
    """ANALYZE (or VACUUM, see ``refresh_statistics``) the tables that changed much since their last ANALYZE, and
    count the owners of the summaries' frequent words again when autovacuum analysed the summaries since the last
    count; returns the names of the tables refreshed (``WORD_OWNERS`` for that count alone)."""
    stale = [
        row[0] for row in await executor.fetch(_STALE, tables=list(TABLES), minimum=STALE_MINIMUM, share=STALE_SHARE)
    ]
    await refresh_statistics(executor, tuple(stale))
    if "thing_summaries" not in stale and await executor.fetchval(_OWNERS_BEHIND):
        # Autovacuum analysed the summaries first: their frequent words may have changed since the owners' count.
        await count_word_owners(executor)
        stale.append(WORD_OWNERS)
    return stale


__all__ = [
    "OWNER_SAMPLE_ROWS",
    "READ_FROM_INDEXES",
    "TABLES",
    "WORDS_STATISTICS",
    "WORD_OWNERS",
    "count_word_owners",
    "refresh_stale_statistics",
    "refresh_statistics",
]
