"""Descriptions and the change log.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "descriptions",
        sa.Column("id", sa.String(collation="C"), primary_key=True),
        sa.Column("document_text", sa.Text(), nullable=False),
        sa.Column("document", postgresql.JSONB(), nullable=False),
        sa.Column("anonymous", sa.Boolean(), nullable=False),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("modified", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ttl", sa.Float(), nullable=True),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_descriptions"),
    )
    op.create_index(
        "ix_descriptions_expires",
        "descriptions",
        ["expires"],
        postgresql_where=sa.text("expires IS NOT NULL"),
    )
    op.create_table(
        "changes",
        sa.Column("seq", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("thing_id", sa.String(collation="C"), nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("diff", postgresql.JSONB(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_changes"),
    )
    op.create_index("ix_changes_thing_id", "changes", ["thing_id"])


def downgrade() -> None:
    op.drop_table("changes")
    op.drop_table("descriptions")
