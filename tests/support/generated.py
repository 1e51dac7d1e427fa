"""A generated catalogue at scale in three ``INSERT … SELECT`` statements (descriptions, summaries, capabilities):
10⁵ rows in seconds, for plan tests. Realistic in shape, not in content: agents and tools of 25 vendors, titles
and texts from a few hundred words, a word every description contains ("service"), three capabilities each out of
300, in three versions."""

from __future__ import annotations

from sqlalchemy import Integer, bindparam, text

from registry.store.database import Database
from registry.store.statistics import refresh_statistics

VENDORS = 25
CAPABILITIES = 300


#: A pseudo-random number per row (and salt), so that no attribute follows the order of ids or titles.
def _random(salt: str) -> str:
    return f"(('x' || substr(md5(n::text || '{salt}'), 1, 7))::bit(28)::int)"


_DESCRIPTIONS = """
INSERT INTO descriptions (id, document_text, anonymous, created, modified, expires, ttl, last_seen, revision)
SELECT 'urn:gen:' || n, '{"id":"urn:gen:' || n || '","title":"Generated ' || n || '"}', false,
       now() - n * interval '1 second', now() - n * interval '1 second', NULL, NULL, now(), n
FROM generate_series(1, :count) AS n
"""
_SUMMARIES = f"""
INSERT INTO thing_summaries (thing_id, kind, title, title_key, vendor_name, vendor_key, version, types, summary,
                             search)
SELECT 'urn:gen:' || n, CASE WHEN {_random("kind")} % 3 = 0 THEN 'tool' ELSE 'agent' END,
       initcap(topic) || ' ' || md5(n::text), topic || ' ' || md5(n::text),
       'Vendor ' || {_random("vendor")} % {VENDORS}, 'vendor ' || {_random("vendor")} % {VENDORS},
       '1.' || n % 3 || '.0',
       ARRAY['Thing', CASE WHEN {_random("kind")} % 3 = 0 THEN 'lmos:Tool' ELSE 'lmos:Agent' END], '{{}}'::jsonb,
       setweight(to_tsvector('english', topic), 'A')
       || setweight(to_tsvector('english', 'A service answering questions about topic'
                    || {_random("topic")} % 500 || ' and ' || topic), 'B')
FROM generate_series(1, :count) AS n,
     LATERAL (SELECT (ARRAY['weather','billing','travel','support','search','booking'])[1 + {_random("title")} % 6]
              AS topic) AS t
"""
_CAPABILITIES = f"""
INSERT INTO thing_capabilities (thing_id, position, source, capability_id, name, name_key, version)
SELECT 'urn:gen:' || n, k, 'lmos', 'urn:capability:' || c, 'capability' || c, 'capability' || c,
       (1 + k) || '.' || n % 3 || '.0'
FROM generate_series(1, :count) AS n, generate_series(0, 2) AS k,
     LATERAL (SELECT ({_random("capability")} + k * 101) % {CAPABILITIES} AS c) AS picked
"""


#: PostgreSQL reports a session's row counts when it next goes idle, and at most once a second: this makes it the
#: end of the current transaction.
FLUSH_STATISTICS = text("SELECT pg_stat_force_next_flush()")


async def generate(database: Database, count: int) -> None:
    """``count`` descriptions with their summaries and capabilities, then fresh statistics (as after an import)."""
    async with database.transaction() as tx:
        for statement in (_DESCRIPTIONS, _SUMMARIES, _CAPABILITIES):
            await tx.execute(text(statement).bindparams(bindparam("count", type_=Integer)), count=count)
        await tx.execute(FLUSH_STATISTICS)  # the rows written are counted before the ANALYZE, not after it
    await refresh_statistics(database)
