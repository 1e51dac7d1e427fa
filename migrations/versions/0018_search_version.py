"""How each summary's full-text words were composed: ``thing_summaries.search_version``.

The words include what the products a description names are known for (registry/descriptions/gazetteer.py), so a
changed product list changes them: the server computes the words of every row whose version is not its own again,
in the background and in batches (registry/projections/search_words.py), as it embeds descriptions again after a
model change. The column is added empty (a change of the catalogue only, no rewrite of the table): rows stored
before it are refreshed by that job once a server of this revision runs.

Revision ID: 0018_search_version
Revises: 0017_description_vectors
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_search_version"
down_revision = "0017_description_vectors"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("thing_summaries", sa.Column("search_version", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("thing_summaries", "search_version")
