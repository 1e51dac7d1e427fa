"""An index for searches sorted by modification (newest first).

Revision ID: 0007_scale
Revises: 0006_auth
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_scale"
down_revision = "0006_auth"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_descriptions_modified", "descriptions", [sa.text("modified DESC"), "id"])


def downgrade() -> None:
    op.drop_index("ix_descriptions_modified", table_name="descriptions")
