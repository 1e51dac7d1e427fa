"""Vectors of descriptions and of their capabilities for natural-language search, where pgvector is available.

The extension is created only if the server offers it (``pg_available_extensions``): without it the directory
starts all the same and answers needs with full-text search alone (registry/embeddings/indexer.py says so in
``/readyz``). ``part`` -1 is the description's vector, 0 and up its capabilities' (thing_capabilities.position);
``model`` names the provider's model, so that vectors of another model are computed again; ``revision`` is the
description's when its vectors were computed. The HNSW index serves vectors of 256 dimensions (the shipped
WordLlama model's); vectors of other sizes are compared by a scan.

Revision ID: 0017_description_vectors
Revises: 0016_search_words
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_description_vectors"
down_revision = "0016_search_words"
branch_labels = None
depends_on = None


def upgrade() -> None:
    connection = op.get_bind()
    available = connection.execute(sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).first()
    if available is None:
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(
        """
        CREATE TABLE description_vectors (
            thing_id varchar COLLATE "C" NOT NULL REFERENCES descriptions (id) ON DELETE CASCADE,
            part integer NOT NULL,
            revision bigint NOT NULL,
            model text NOT NULL,
            embedding vector NOT NULL,
            PRIMARY KEY (thing_id, part)
        )
        """
    )
    op.execute(
        "CREATE INDEX ix_description_vectors_embedding_256 ON description_vectors "
        "USING hnsw ((embedding::vector(256)) vector_cosine_ops) WHERE vector_dims(embedding) = 256"
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS description_vectors")
