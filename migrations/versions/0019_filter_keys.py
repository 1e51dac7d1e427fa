"""Filter keys: what a search filters on by kind, vendor words and capability, in one GIN-indexed array
``thing_summaries.filter_keys``, so that a search combining them reads about the rows that match all of them.

Each filter had an index of its own (kind: B-tree; vendor words: GIN of a tsvector; capability: GIN of
``capability_keys``) and PostgreSQL intersected their bitmaps: every bitmap is built whole first, so a vendor
prefix that a tenth of the catalogue matches cost a bitmap of a tenth of the catalogue, whatever the capability.
In one GIN index the conditions are keys of one scan, and GIN skips through the posting lists of the frequent
keys to the entries of the rarest one.

The array holds ``kind:<kind>``, the ``capability_keys`` (``id:<id>``, ``name:<name in lower case>``) and
``vendor:<prefix>`` for every prefix of up to 32 characters of every word of the vendor name (the words of
``vendor_words``), so that a vendor word prefix is a key. It is a generated column: every write path fills it.

Revision ID: 0019_filter_keys
Revises: 0018_search_version
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY

revision = "0019_filter_keys"
down_revision = "0018_search_version"
branch_labels = None
depends_on = None

#: Immutable, so that a generated column may call it; the vendor words as ``vendor_words`` has them.
FUNCTION = r"""
CREATE FUNCTION thing_filter_keys(kind text, vendor_name text, capability_keys text[]) RETURNS text[]
IMMUTABLE PARALLEL SAFE LANGUAGE sql AS $$
  SELECT ARRAY['kind:' || kind] || capability_keys || coalesce((
    SELECT array_agg(DISTINCT 'vendor:' || left(word, length))
    FROM unnest(tsvector_to_array(
           to_tsvector('simple'::regconfig, regexp_replace(coalesce(vendor_name, ''), '\W+', ' ', 'g')))) AS word,
         generate_series(1, least(length(word), 32)) AS length), '{}')
$$
"""


def upgrade() -> None:
    op.execute(FUNCTION)
    op.add_column(
        "thing_summaries",
        sa.Column(
            "filter_keys",
            ARRAY(sa.Text()),
            sa.Computed("thing_filter_keys(kind, vendor_name, capability_keys)", persisted=True),
            nullable=True,
        ),
    )
    op.create_index("ix_thing_summaries_filter_keys", "thing_summaries", ["filter_keys"], postgresql_using="gin")


def downgrade() -> None:
    op.drop_index("ix_thing_summaries_filter_keys", table_name="thing_summaries")
    op.drop_column("thing_summaries", "filter_keys")
    op.execute("DROP FUNCTION thing_filter_keys(text, text, text[])")
