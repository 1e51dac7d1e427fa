"""Owners and actors identified by where their credential came from: ``key:<name>`` for API keys,
``jwt:<issuer>|<name>`` for access tokens (registry/auth/principal.py), so that a token's subject never equals an
API key's owner name, and the owner index covers the tenant (an owner is its identity in its tenant).

Existing names are given the origin that made them: a name some API key has as its owner (``descriptions.owner``,
transfers' ``from``/``to``) or as its name (``changes.actor``) is a key's; any other one is a token's of the
configured issuer (``REGISTRY_AUTH_JWT_ISSUER``, handed to the migration by ``registry migrate`` / ``serve``),
or a key's when no issuer is configured (names an admin transferred to: a key created with ``--owner`` takes them).

Revision ID: 0013_owner_identity
Revises: 0012_rate_counts
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from alembic import context, op

revision = "0013_owner_identity"
down_revision = "0012_rate_counts"
branch_labels = None
depends_on = None

_INDEX = "ix_descriptions_owner"


def _identity(key_names: str) -> Callable[[str], str]:
    """SQL of the identity of a name (an expression): a key's if ``key_names`` (a query) has it."""

    def of(name: str) -> str:
        return (
            f"CASE WHEN {name} IS NULL THEN NULL "
            f"WHEN :issuer = '' OR {name} IN ({key_names}) THEN 'key:' || {name} "
            f"ELSE 'jwt:' || :escaped_issuer || '|' || {name} END"
        )

    return of


def _name(identity: str) -> str:
    """SQL of the name in an identity (for the downgrade)."""
    return (
        f"CASE WHEN {identity} LIKE 'key:%' THEN substr({identity}, 5) "
        f"WHEN {identity} LIKE 'jwt:%' THEN substr({identity}, strpos({identity}, '|') + 1) ELSE {identity} END"
    )


def _rewrite(owner: Callable[[str], str], actor: Callable[[str], str], **values: str) -> None:
    """Owners of descriptions, actors of changes and the owners a transfer names, rewritten by ``owner`` and
    ``actor`` (each from the SQL of a name to the SQL of what it becomes)."""
    given, taken = owner("(diff ->> 'from')"), owner("(diff ->> 'to')")
    transfer = f"jsonb_build_object('id', diff -> 'id', 'from', {given}, 'to', {taken})"
    for statement in (
        f"UPDATE descriptions SET owner = {owner('owner')} WHERE owner IS NOT NULL",
        f"UPDATE changes SET actor = {actor('actor')} WHERE actor IS NOT NULL",
        f"UPDATE changes SET diff = {transfer} WHERE type = 'thing_transferred' AND diff IS NOT NULL",
    ):
        op.execute(sa.text(statement).bindparams(**values) if values else sa.text(statement))


def upgrade() -> None:
    issuer = str(context.config.attributes.get("jwt_issuer") or "")
    escaped = issuer.replace("%", "%25").replace("|", "%7C")
    owners, actors = _identity("SELECT owner FROM api_keys"), _identity("SELECT name FROM api_keys")
    _rewrite(owners, actors, issuer=issuer, escaped_issuer=escaped)
    op.drop_index(_INDEX, table_name="descriptions")
    op.create_index(_INDEX, "descriptions", ["owner", "tenant"], postgresql_where=sa.text("owner IS NOT NULL"))


def downgrade() -> None:
    op.drop_index(_INDEX, table_name="descriptions")
    op.create_index(_INDEX, "descriptions", ["owner"], postgresql_where=sa.text("owner IS NOT NULL"))
    _rewrite(_name, _name)
