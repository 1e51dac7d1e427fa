"""How many owners hold each frequent word: ``word_owner_shares``, one row the statistics refresh writes after each
ANALYZE of ``thing_summaries`` (registry/store/statistics.py). The need search weighs a word by the lesser of its
share of descriptions and its share of owners, so that one party registering many descriptions holding a word
raises that word's share by at most one owner's worth (docs/decisions/0014-word-shares-bounded-by-owners.md).
Created empty: until the first refresh every word weighs by its share of descriptions.

Revision ID: 0021_word_owner_shares
Revises: 0020_offers_in_provider_order
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0021_word_owner_shares"
down_revision = "0020_offers_in_provider_order"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "word_owner_shares",
        sa.Column("single", sa.Boolean(), nullable=False),
        sa.Column("lexemes", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("shares", postgresql.ARRAY(sa.Float()), nullable=False),
        sa.Column("owners", sa.Integer(), nullable=False),
        sa.Column("sampled", sa.Integer(), nullable=False),
        sa.Column("counted", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("single", name="pk_word_owner_shares"),
    )


def downgrade() -> None:
    op.drop_table("word_owner_shares")
