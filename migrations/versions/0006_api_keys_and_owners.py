"""Authentication and ownership: API keys (hashed secrets), the owner and tenant of each description, and the
principal that made each change (audit).

Descriptions registered before this migration have no owner: with authentication on, only an admin may change
them (or transfer them to an owner).

Revision ID: 0006_auth
Revises: 0005_spine
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006_auth"
down_revision = "0005_spine"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("secret_hash", sa.Text(), nullable=False),
        sa.Column("scopes", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("owner", sa.Text(), nullable=False),
        sa.Column("namespaces", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("vendors", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("tenant", sa.Text(), nullable=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.UniqueConstraint("name", name="uq_api_keys_name"),
    )
    op.add_column("descriptions", sa.Column("owner", sa.Text(), nullable=True))
    op.add_column("descriptions", sa.Column("tenant", sa.Text(), nullable=True))
    op.create_index("ix_descriptions_owner", "descriptions", ["owner"], postgresql_where=sa.text("owner IS NOT NULL"))
    op.add_column("changes", sa.Column("actor", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("changes", "actor")
    op.drop_index("ix_descriptions_owner", table_name="descriptions")
    op.drop_column("descriptions", "tenant")
    op.drop_column("descriptions", "owner")
    op.drop_table("api_keys")
