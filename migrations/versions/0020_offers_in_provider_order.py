"""Capability offers in provider order: both covering indexes of ``thing_capabilities`` by which resolution finds
a capability's offers (by id, by name) are keyed by (capability, version, thing_id, position), so that the offers
of one version are read in provider order, a page's worth at a time: resolution without vendor rules reads the
first providers of each version in range and ranks those, instead of sorting every offer of the capability.

Revision ID: 0020_offers_in_provider_order
Revises: 0019_filter_keys
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0020_offers_in_provider_order"
down_revision = "0019_filter_keys"
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
        ["capability_id", "version", "thing_id", "position"],
        postgresql_include=["name", "vendor_name"],
    )
    op.create_index(
        _BY_NAME,
        "thing_capabilities",
        ["name_key", "version", "thing_id", "position"],
        postgresql_include=["capability_id", "name", "vendor_name"],
    )


def downgrade() -> None:
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
