"""One home for projections: their rows are removed by the projections themselves, and the unused jsonb copy goes.

- ``descriptions.document`` (jsonb) goes: it is written on every write and never read, and PostgreSQL parses each
  document into jsonb on top of storing its text. The text (``document_text``) is the description as registered.
- The foreign keys with ``ON DELETE CASCADE`` from ``description_rdf``, ``thing_summaries`` and
  ``thing_capabilities`` go: deletes and purges tell each projection which descriptions left, in the same
  transaction, so a projection (in PostgreSQL or elsewhere) learns of every removal the same way.

Revision ID: 0005_spine
Revises: 0004_perf
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005_spine"
down_revision = "0004_perf"
branch_labels = None
depends_on = None

FOREIGN_KEYS = (
    ("description_rdf", "fk_description_rdf_thing_id_descriptions"),
    ("thing_summaries", "fk_thing_summaries_thing_id_descriptions"),
    ("thing_capabilities", "fk_thing_capabilities_thing_id_descriptions"),
)


def upgrade() -> None:
    op.drop_column("descriptions", "document")
    for table, name in FOREIGN_KEYS:
        op.drop_constraint(name, table, type_="foreignkey")


def downgrade() -> None:
    for table, name in FOREIGN_KEYS:
        op.execute(f"DELETE FROM {table} WHERE thing_id NOT IN (SELECT id FROM descriptions)")
        op.create_foreign_key(name, table, "descriptions", ["thing_id"], ["id"], ondelete="CASCADE")
    op.add_column("descriptions", sa.Column("document", postgresql.JSONB(), nullable=True))
    op.execute("UPDATE descriptions SET document = document_text::jsonb")
    op.alter_column("descriptions", "document", nullable=False)
