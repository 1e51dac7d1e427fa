"""Vendor names as words (a generated tsvector with a GIN index) for word and prefix vendor matching.

Revision ID: 0008_versions
Revises: 0007_scale
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0008_versions"
down_revision = "0007_scale"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "thing_summaries",
        sa.Column(
            "vendor_words",
            postgresql.TSVECTOR(),
            sa.Computed("to_tsvector('simple'::regconfig, coalesce(vendor_name, ''))", persisted=True),
            nullable=True,
        ),
    )
    op.create_index("ix_thing_summaries_vendor_words", "thing_summaries", ["vendor_words"], postgresql_using="gin")


def downgrade() -> None:
    op.drop_index("ix_thing_summaries_vendor_words", table_name="thing_summaries")
    op.drop_column("thing_summaries", "vendor_words")
