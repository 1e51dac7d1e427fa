"""Compress the large columns with lz4 where PostgreSQL was built with it.

Every write stores its description (text and jsonb), its diff, its RDF and its summary; each of these is several
kB and TOAST-compressed on write. The default pglz makes that compression a large share of the database's CPU time
per registration; lz4 does it several times faster. New values only: rows already written stay pglz (PostgreSQL
reads both). A PostgreSQL without lz4 (e.g. the embedded one) keeps pglz.

Revision ID: 0004_perf
Revises: 0003_discovery
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_perf"
down_revision = "0003_discovery"
branch_labels = None
depends_on = None

LARGE_COLUMNS = (
    ("descriptions", "document_text"),
    ("descriptions", "document"),
    ("changes", "diff"),
    ("description_rdf", "ntriples"),
    ("thing_summaries", "summary"),
    ("thing_versions", "document_text"),
)


def _lz4_available() -> bool:
    query = "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
    return bool(op.get_bind().execute(sa.text(query)).scalar())


def upgrade() -> None:
    if _lz4_available():
        for table, column in LARGE_COLUMNS:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION lz4")


def downgrade() -> None:
    for table, column in LARGE_COLUMNS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION DEFAULT")
