"""Words of names in the search text and in vendor names.

Names spelled as domains or paths (``io.github.redis``, ``io.github.redis/mcp-redis``) are one token to the text
parser: the vendor's words are read from the name with its punctuation turned into spaces, and every summary's
full-text vector is written again from its description with the words of its names
(registry.descriptions.summary.Summary.search_texts).

Revision ID: 0016_search_words
Revises: 0015_change_seq_after_xid
Create Date: 2026-11-28
"""

from __future__ import annotations

import msgspec
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from registry.descriptions.summary import summarise

revision = "0016_search_words"
down_revision = "0015_change_seq_after_xid"
branch_labels = None
depends_on = None

VENDOR_WORDS = r"to_tsvector('simple'::regconfig, regexp_replace(coalesce(vendor_name, ''), '\W+', ' ', 'g'))"
PLAIN_VENDOR_WORDS = "to_tsvector('simple'::regconfig, coalesce(vendor_name, ''))"
#: Descriptions re-read per statement.
BATCH = 500

_READ = sa.text(
    "SELECT d.id, d.document_text FROM descriptions d JOIN thing_summaries s ON s.thing_id = d.id "
    "WHERE d.id > :after ORDER BY d.id LIMIT :batch"
)
_WRITE = sa.text(
    "UPDATE thing_summaries SET search = setweight(to_tsvector('english', :a), 'A') || "
    "setweight(to_tsvector('english', :b), 'B') || setweight(to_tsvector('english', :c), 'C') || "
    "setweight(to_tsvector('english', :d), 'D') WHERE thing_id = :id"
)


def _vendor_words(expression: str) -> None:
    op.drop_index("ix_thing_summaries_vendor_words", table_name="thing_summaries")
    op.drop_column("thing_summaries", "vendor_words")
    op.add_column(
        "thing_summaries",
        sa.Column("vendor_words", postgresql.TSVECTOR(), sa.Computed(expression, persisted=True), nullable=True),
    )
    op.create_index("ix_thing_summaries_vendor_words", "thing_summaries", ["vendor_words"], postgresql_using="gin")


def _search_texts() -> None:
    connection = op.get_bind()
    after = ""
    while rows := connection.execute(_READ, {"after": after, "batch": BATCH}).all():
        for thing_id, document_text in rows:
            a, b, c, d = summarise(msgspec.json.decode(document_text)).search_texts()
            connection.execute(_WRITE, {"id": thing_id, "a": a, "b": b, "c": c, "d": d})
        after = rows[-1][0]


def upgrade() -> None:
    _vendor_words(VENDOR_WORDS)
    _search_texts()


def downgrade() -> None:
    _vendor_words(PLAIN_VENDOR_WORDS)
