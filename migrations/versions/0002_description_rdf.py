"""RDF of each description, computed at write time (the semantic layer).

Revision ID: 0002_semantic
Revises: 0001_initial
Create Date: 2026-11-21
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002_semantic"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "description_rdf",
        sa.Column("thing_id", sa.String(collation="C"), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("ntriples", sa.Text(), nullable=False),
        sa.Column("unknown_contexts", postgresql.JSONB(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("thing_id", name="pk_description_rdf"),
        sa.ForeignKeyConstraint(
            ["thing_id"],
            ["descriptions.id"],
            name="fk_description_rdf_thing_id_descriptions",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("description_rdf")
