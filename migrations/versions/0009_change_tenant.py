"""The tenant of each change (whose readers may see it in /events and /api/v1/changes), and room in the change
type for ``thing_transferred`` (an ownership transfer, now an entry of the change log).

Changes already logged take the tenant of their description when it still exists, from its latest creation on;
changes of descriptions deleted before this migration (or of an earlier description with the same id) cannot be
attributed and stay shared (visible to every tenant).

Revision ID: 0009_change_tenant
Revises: 0008_versions
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_change_tenant"
down_revision = "0008_versions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.alter_column("changes", "type", type_=sa.String(32), existing_type=sa.String(16), existing_nullable=False)
    op.add_column("changes", sa.Column("tenant", sa.Text(), nullable=True))
    op.execute(
        """
        UPDATE changes SET tenant = descriptions.tenant
        FROM descriptions
        WHERE descriptions.id = changes.thing_id
          AND descriptions.tenant IS NOT NULL
          AND changes.seq >= (
              SELECT max(created.seq) FROM changes AS created
              WHERE created.thing_id = changes.thing_id AND created.type = 'thing_created'
          )
        """
    )


def downgrade() -> None:
    op.execute("DELETE FROM changes WHERE type = 'thing_transferred'")
    op.drop_column("changes", "tenant")
    op.alter_column("changes", "type", type_=sa.String(16), existing_type=sa.String(32), existing_nullable=False)
