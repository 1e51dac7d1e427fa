"""Ids held for their rightful party: ``descriptions.rightful`` (the owner holds the id by a binding to what it
was derived from, a tool's vendor or an A2A card's URL, or by an admin's transfer), and ``id_claims``, the
tombstones the purge leaves so that an expired registration's id stays its owner's for ``REGISTRY_EXPIRY_GRACE``
(registry/auth/ownership.py). Existing descriptions hold their ids as before: not rightfully, so a party bound to
their vendor or URL may take a derived id over.

Revision ID: 0014_id_claims
Revises: 0013_owner_identity
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_id_claims"
down_revision = "0013_owner_identity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("descriptions", sa.Column("rightful", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        "id_claims",
        sa.Column("thing_id", sa.String(collation="C"), nullable=False),
        sa.Column("owner", sa.Text(), nullable=True),
        sa.Column("tenant", sa.Text(), nullable=True),
        sa.Column("rightful", sa.Boolean(), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("thing_id", name="pk_id_claims"),
    )
    op.create_index("ix_id_claims_until", "id_claims", ["until"])


def downgrade() -> None:
    op.drop_table("id_claims")
    op.drop_column("descriptions", "rightful")
