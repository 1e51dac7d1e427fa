"""Rate limits shared by every server process: requests counted per limited client and window
(``registry/auth/quotas.py``). Unlogged: the counts of the last minutes are not worth a WAL write each.

Revision ID: 0012_rate_counts
Revises: 0011_covering_offers
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "0012_rate_counts"
down_revision = "0011_covering_offers"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE UNLOGGED TABLE rate_counts ("
        " key TEXT NOT NULL,"
        " window_number BIGINT NOT NULL,"
        " count BIGINT NOT NULL,"
        " expires BIGINT NOT NULL,"
        " CONSTRAINT pk_rate_counts PRIMARY KEY (key, window_number))"
    )


def downgrade() -> None:
    op.drop_table("rate_counts")
