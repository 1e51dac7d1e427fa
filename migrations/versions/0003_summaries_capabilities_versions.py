"""Discovery: summaries, capabilities and kept versions of descriptions.

Revision ID: 0003_discovery
Revises: 0002_semantic
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0003_discovery"
down_revision = "0002_semantic"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "thing_summaries",
        sa.Column("thing_id", sa.String(collation="C"), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("title_key", sa.Text(), nullable=False),
        sa.Column("vendor_name", sa.Text(), nullable=True),
        sa.Column("vendor_key", sa.Text(), nullable=True),
        sa.Column("version", sa.Text(), nullable=True),
        sa.Column("types", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("summary", postgresql.JSONB(), nullable=False),
        sa.Column("search", postgresql.TSVECTOR(), nullable=False),
        sa.PrimaryKeyConstraint("thing_id", name="pk_thing_summaries"),
        sa.ForeignKeyConstraint(
            ["thing_id"],
            ["descriptions.id"],
            name="fk_thing_summaries_thing_id_descriptions",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_thing_summaries_kind", "thing_summaries", ["kind"])
    op.create_index("ix_thing_summaries_vendor_key", "thing_summaries", ["vendor_key"])
    op.create_index("ix_thing_summaries_title_key", "thing_summaries", ["title_key", "thing_id"])
    op.create_index("ix_thing_summaries_types", "thing_summaries", ["types"], postgresql_using="gin")
    op.create_index("ix_thing_summaries_search", "thing_summaries", ["search"], postgresql_using="gin")
    op.create_table(
        "thing_capabilities",
        sa.Column("thing_id", sa.String(collation="C"), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(8), nullable=False),
        sa.Column("capability_id", sa.Text(), nullable=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("name_key", sa.Text(), nullable=False),
        sa.Column("version", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("thing_id", "position", name="pk_thing_capabilities"),
        sa.ForeignKeyConstraint(
            ["thing_id"],
            ["descriptions.id"],
            name="fk_thing_capabilities_thing_id_descriptions",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_thing_capabilities_capability_id", "thing_capabilities", ["capability_id", "version"])
    op.create_index("ix_thing_capabilities_name_key", "thing_capabilities", ["name_key", "version"])
    op.create_table(
        "thing_versions",
        sa.Column("thing_id", sa.String(collation="C"), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("document_text", sa.Text(), nullable=False),
        sa.Column("registered", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("previous_version", sa.Text(), nullable=True),
        sa.Column("compatibility", postgresql.JSONB(), nullable=True),
        sa.PrimaryKeyConstraint("thing_id", "version", name="pk_thing_versions"),
    )


def downgrade() -> None:
    op.drop_table("thing_versions")
    op.drop_table("thing_capabilities")
    op.drop_table("thing_summaries")
