"""Change sequences are taken after the writing transaction has its transaction id.

The change feed gives up waiting for a missing sequence only once every transaction that could have taken it has
ended (``registry/events/feed.py``): it compares the oldest running transaction id with the newest one it saw
when the gap appeared. That holds only if a transaction has its id before it takes a sequence, so the sequence
comes from ``next_change_seq()``, which asks for the id first, instead of an identity column (whose value is
drawn before the row's insert assigns the id). The new sequence goes on after the last value the identity gave.

Revision ID: 0015_change_seq_after_xid
Revises: 0014_id_claims
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "0015_change_seq_after_xid"
down_revision = "0014_id_claims"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        DO $$
        DECLARE
            last_taken bigint;
        BEGIN
            SELECT COALESCE(MAX(value), 0) INTO last_taken FROM (
                SELECT last_value AS value FROM changes_seq_seq WHERE is_called
                UNION ALL SELECT MAX(seq) FROM changes
            ) AS taken;
            ALTER TABLE changes ALTER COLUMN seq DROP IDENTITY;
            CREATE SEQUENCE change_seq AS bigint OWNED BY changes.seq;
            PERFORM setval('change_seq', last_taken + 1, false);
        END
        $$
        """
    )
    op.execute(
        """
        CREATE FUNCTION next_change_seq() RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            PERFORM pg_current_xact_id();
            RETURN nextval('change_seq');
        END
        $$
        """
    )
    op.execute("ALTER TABLE changes ALTER COLUMN seq SET DEFAULT next_change_seq()")


def downgrade() -> None:
    op.execute(
        """
        DO $$
        DECLARE
            last_taken bigint;
        BEGIN
            SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END INTO last_taken FROM change_seq;
            ALTER TABLE changes ALTER COLUMN seq DROP DEFAULT;
            DROP FUNCTION next_change_seq();
            DROP SEQUENCE change_seq;
            EXECUTE format(
                'ALTER TABLE changes ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (START WITH %s)', last_taken + 1
            );
        END
        $$
        """
    )
