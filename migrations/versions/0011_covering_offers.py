"""Capability offers read from their indexes alone: both indexes of ``thing_capabilities`` by which resolution
finds a capability's offers (by id, by name) also hold the columns it reads, so that it scans them without
visiting the table, where the offers of one capability lie a page apart (reading those pages is most of a
resolution's time in a large catalogue).

Revision ID: 0011_covering_offers
Revises: 0010_capability_keys
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

revision = "0011_covering_offers"
down_revision = "0010_capability_keys"
branch_labels = None
depends_on = None

_BY_ID = "ix_thing_capabilities_capability_id"
_BY_NAME = "ix_thing_capabilities_name_key"


def upgrade() -> None:
    op.drop_index(_BY_ID, table_name="thing_capabilities")
    op.drop_index(_BY_NAME, table_name="thing_capabilities")
    op.create_index(
        _BY_ID,
        "thing_capabilities",
        ["capability_id", "version"],
        postgresql_include=["thing_id", "position", "name", "vendor_name"],
    )
    op.create_index(
        _BY_NAME,
        "thing_capabilities",
        ["name_key", "version"],
        postgresql_include=["thing_id", "position", "capability_id", "name", "vendor_name"],
    )


def downgrade() -> None:
    op.drop_index(_BY_ID, table_name="thing_capabilities")
    op.drop_index(_BY_NAME, table_name="thing_capabilities")
    op.create_index(_BY_ID, "thing_capabilities", ["capability_id", "version"])
    op.create_index(_BY_NAME, "thing_capabilities", ["name_key", "version"])
