"""Capabilities and vendors where the queries of a large catalogue need them (bench/suite.py):

- every capability a description offers, on its summary row (``thing_summaries.capability_keys``, GIN-indexed): a
  search filtered by capability and by vendor, kind or text intersects their indexes instead of probing
  thing_capabilities once per candidate row;
- the vendor of a description, on each of its capability rows (``thing_capabilities.vendor_name``): resolution
  with vendor rules ranks the offers before it reads any description, instead of joining every offer in range to
  its summary.

Rows written before this migration take them from the capability rows and the summaries.

Revision ID: 0010_capability_keys
Revises: 0009_change_tenant
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision = "0010_capability_keys"
down_revision = "0009_change_tenant"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "thing_summaries", sa.Column("capability_keys", ARRAY(sa.Text()), nullable=False, server_default="{}")
    )
    # As registry.store.tables.capability_keys spells them, in the order of the capabilities.
    op.execute(
        """
        UPDATE thing_summaries SET capability_keys = offered.keys
        FROM (
            SELECT thing_id, array_agg(key ORDER BY position, kind) AS keys
            FROM thing_capabilities,
                 LATERAL (VALUES (0, 'id:' || capability_id), (1, 'name:' || name_key)) AS entry (kind, key)
            WHERE key IS NOT NULL
            GROUP BY thing_id
        ) AS offered
        WHERE offered.thing_id = thing_summaries.thing_id
        """
    )
    op.add_column("thing_capabilities", sa.Column("vendor_name", sa.Text(), nullable=True))
    op.execute(
        """
        UPDATE thing_capabilities SET vendor_name = thing_summaries.vendor_name
        FROM thing_summaries
        WHERE thing_summaries.thing_id = thing_capabilities.thing_id AND thing_summaries.vendor_name IS NOT NULL
        """
    )
    op.create_index(
        "ix_thing_summaries_capability_keys", "thing_summaries", ["capability_keys"], postgresql_using="gin"
    )


def downgrade() -> None:
    op.drop_index("ix_thing_summaries_capability_keys", table_name="thing_summaries")
    op.drop_column("thing_capabilities", "vendor_name")
    op.drop_column("thing_summaries", "capability_keys")
