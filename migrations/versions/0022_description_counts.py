"""Description counts kept with the writes: ``description_counts`` holds signed deltas that sum to the number of
rows of ``descriptions`` per tenant and of ``thing_summaries`` per kind, so that the collection's exact total and
the descriptions by kind are a sum over a few rows instead of a pass over the catalogue.

Statement-level triggers with transition tables append the deltas: each write statement adds at most one row per
key it changes (a replace that keeps tenant and kind adds none), and a TRUNCATE drops its table's. Rows of
``descriptions`` are keyed by tenant with no kind; rows of ``thing_summaries`` by kind with no tenant (the readers
of kinds see every tenant). The periodic compaction (registry/store/counts.py) folds the deltas into one row per
key. The initial counts are those of the existing rows.

Revision ID: 0022_description_counts
Revises: 0021_word_owner_shares
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022_description_counts"
down_revision = "0021_word_owner_shares"
branch_labels = None
depends_on = None

#: (table, its trigger functions' name, the key columns its deltas carry: tenant, kind; its deltas' rows).
_COUNTED = (
    ("descriptions", "description_counts_of_descriptions", "tenant, NULL::text", "kind IS NULL"),
    ("thing_summaries", "description_counts_of_summaries", "NULL::text, kind", "kind IS NOT NULL"),
)
_EVENTS = {
    "insert": ("REFERENCING NEW TABLE AS added", "SELECT {key}, 1 FROM added"),
    "update": (
        "REFERENCING OLD TABLE AS removed NEW TABLE AS added",
        "SELECT {key}, 1 FROM added UNION ALL SELECT {key}, -1 FROM removed",
    ),
    "delete": ("REFERENCING OLD TABLE AS removed", "SELECT {key}, -1 FROM removed"),
}


def _function(name: str, key: str, rows: str) -> str:
    return f"""
        CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO description_counts (tenant, kind, delta)
            SELECT tenant, kind, sum(delta) FROM ({rows.format(key=key)}) AS changed (tenant, kind, delta)
            GROUP BY tenant, kind HAVING sum(delta) <> 0;
            RETURN NULL;
        END $$
    """


def upgrade() -> None:
    op.create_table(
        "description_counts",
        sa.Column("tenant", sa.Text(), nullable=True),
        sa.Column("kind", sa.Text(), nullable=True),
        sa.Column("delta", sa.BigInteger(), nullable=False),
    )
    for table, function, key, deltas in _COUNTED:
        for event, (referencing, rows) in _EVENTS.items():
            op.execute(_function(f"{function}_{event}", key, rows))
            op.execute(
                f"CREATE TRIGGER {function}_{event} AFTER {event.upper()} ON {table} {referencing} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {function}_{event}()"
            )
        # A TRUNCATE has no transition table: it leaves no row of its table to count.
        op.execute(
            f"CREATE FUNCTION {function}_truncate() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN DELETE FROM description_counts WHERE {deltas}; RETURN NULL; END $$"
        )
        op.execute(
            f"CREATE TRIGGER {function}_truncate AFTER TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {function}_truncate()"
        )
    # Under the lock, no write moves the rows between the count and the triggers' first delta.
    op.execute("LOCK TABLE descriptions, thing_summaries IN SHARE MODE")
    op.execute(
        "INSERT INTO description_counts (tenant, kind, delta) "
        "SELECT tenant, NULL, count(*) FROM descriptions GROUP BY tenant"
    )
    op.execute(
        "INSERT INTO description_counts (tenant, kind, delta) "
        "SELECT NULL, kind, count(*) FROM thing_summaries GROUP BY kind"
    )


def downgrade() -> None:
    for table, function, _, _ in _COUNTED:
        for event in (*_EVENTS, "truncate"):
            op.execute(f"DROP TRIGGER {function}_{event} ON {table}")
            op.execute(f"DROP FUNCTION {function}_{event}()")
    op.drop_table("description_counts")
