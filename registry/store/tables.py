"""SQLAlchemy Core tables: the one description of the schema that queries are written against.

The schema itself is created and changed only by the Alembic migrations in ``migrations/``; a test checks that
the migrated database matches these tables.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ColumnElement,
    Computed,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    false,
    func,
    or_,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

#: ``COLLATE "C"`` orders ids by UTF-8 bytes, which is Unicode code-point order (TDD listing rule).
ID_TYPE = String(collation="C")

descriptions = Table(
    "descriptions",
    metadata,
    Column("id", ID_TYPE, primary_key=True),
    # The document exactly as registered (key order kept).
    Column("document_text", Text, nullable=False),
    Column("anonymous", Boolean, nullable=False, default=False),
    Column("created", DateTime(timezone=True), nullable=False),
    Column("modified", DateTime(timezone=True), nullable=False),
    Column("expires", DateTime(timezone=True), nullable=True),
    Column("ttl", Float, nullable=True),
    Column("last_seen", DateTime(timezone=True), nullable=False),
    # Change-log sequence of the last write: the ETag, and the position replicas compare against.
    Column("revision", BigInteger, nullable=False),
    # The owner identity that may change it (``key:<name>`` or ``jwt:<issuer>|<name>``, registry/auth/principal.py),
    # in its tenant; null when registered with authentication off.
    Column("owner", Text, nullable=True),
    # The tenant of its creator; null = shared by all tenants.
    Column("tenant", Text, nullable=True),
    # The owner holds the id by a binding to what the id was derived from (a tool's vendor, an A2A card's URL) or
    # by an admin's decision: no other party may take it over (registry/auth/ownership.py).
    Column("rightful", Boolean, nullable=False, server_default=false()),
    Index("ix_descriptions_expires", "expires", postgresql_where="expires IS NOT NULL"),
    # An owner's descriptions (its quota): by owner identity and tenant.
    Index("ix_descriptions_owner", "owner", "tenant", postgresql_where="owner IS NOT NULL"),
)
# Newest first (search sorted by modification), id ascending within a moment as the keyset order has it.
Index("ix_descriptions_modified", descriptions.c.modified.desc(), descriptions.c.id)


#: Signed deltas kept with the writes by triggers (migration 0022_description_counts): per tenant, with no kind,
#: they sum to the rows of ``descriptions``; per kind, with no tenant, to the rows of ``thing_summaries``. A
#: periodic compaction folds them into one row per key (registry/store/counts.py).
description_counts = Table(
    "description_counts",
    metadata,
    Column("tenant", Text, nullable=True),
    Column("kind", Text, nullable=True),
    Column("delta", BigInteger, nullable=False),
)


def live(moment: Any = None) -> ColumnElement[bool]:
    """Descriptions that have not expired at ``moment`` (default: the statement's time). Expired descriptions are
    never served, purged yet or not; every query of live descriptions uses this one rule."""
    return or_(descriptions.c.expires.is_(None), descriptions.c.expires > (func.now() if moment is None else moment))


def of_tenant(tenant: ColumnElement[Any], readers_tenant: Any) -> ColumnElement[bool]:
    """Rows a reader of ``readers_tenant`` (a value or a bound parameter) may see, by their ``tenant`` column: the
    shared ones (no tenant) and its tenant's (registry/auth/tenancy.py). The one SQL form of that rule."""
    return or_(tenant.is_(None), tenant == readers_tenant)


#: Descriptions a reader of one tenant may see, that tenant given as the statement's ``tenant`` parameter.
DESCRIPTIONS_OF_TENANT = of_tenant(descriptions.c.tenant, bindparam("tenant", type_=Text))


def capability_keys(capability_id: str | None, name: str) -> list[str]:
    """The ``capability_keys`` of one offered capability: its id, and its name in lower case (a capability filter
    matches either). Prefixed, so that an id never matches a name."""
    keys = [f"name:{name.lower()}"]
    return keys if capability_id is None else [f"id:{capability_id}", *keys]


#: Longest vendor word prefix ``filter_keys`` holds (migration 0019_filter_keys).
VENDOR_PREFIX_CHARS = 32


def kind_key(kind: str) -> str:
    """The ``filter_keys`` entry of a kind."""
    return f"kind:{kind}"


def vendor_prefix_key(word: str) -> str:
    """The ``filter_keys`` entry that every vendor name with a word starting with ``word`` holds (a word longer
    than the prefixes kept: its first ``VENDOR_PREFIX_CHARS`` characters, a necessary condition only)."""
    return f"vendor:{word[:VENDOR_PREFIX_CHARS]}"


#: Tombstones of purged registrations: who held each id when its registration expired, and until when that owner
#: alone may register it again (``REGISTRY_EXPIRY_GRACE`` after the expiry). Written by the purge, read by writes.
id_claims = Table(
    "id_claims",
    metadata,
    Column("thing_id", ID_TYPE, primary_key=True),
    Column("owner", Text, nullable=True),
    Column("tenant", Text, nullable=True),
    Column("rightful", Boolean, nullable=False),
    Column("until", DateTime(timezone=True), nullable=False),
    Index("ix_id_claims_until", "until"),
)

changes = Table(
    "changes",
    metadata,
    # From next_change_seq() (migration 0015): the writing transaction has its id before it takes a sequence.
    Column("seq", BigInteger, primary_key=True, server_default=text("next_change_seq()")),
    Column("thing_id", ID_TYPE, nullable=False),
    Column("type", String(32), nullable=False),
    # For creates the full document, for updates an RFC 7396 merge patch, for deletes null, for ownership
    # transfers {id, from, to} (the owner identities).
    Column("diff", JSONB, nullable=True),
    Column("at", DateTime(timezone=True), nullable=False),
    # Identity of the principal that made the change (``key:<key name>``, ``jwt:<issuer>|<subject>``; never a
    # secret); null with authentication off and for purges.
    Column("actor", Text, nullable=True),
    # The tenant of the description changed (null = shared): whose readers may see the change.
    Column("tenant", Text, nullable=True),
    Index("ix_changes_thing_id", "thing_id"),
)

#: API keys: only a SHA-256 hash of each secret is stored; ``id`` is the public part of the key.
api_keys = Table(
    "api_keys",
    metadata,
    Column("id", Text, primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("secret_hash", Text, nullable=False),
    Column("scopes", ARRAY(Text), nullable=False),
    Column("owner", Text, nullable=False),
    Column("namespaces", ARRAY(Text), nullable=False),
    Column("vendors", ARRAY(Text), nullable=False),
    Column("tenant", Text, nullable=True),
    Column("created", DateTime(timezone=True), nullable=False),
    Column("expires", DateTime(timezone=True), nullable=True),
    Column("revoked", DateTime(timezone=True), nullable=True),
    Column("last_used", DateTime(timezone=True), nullable=True),
)

#: RDF (N-Triples) of each description, computed when it was written; replicas build their SPARQL index from it.
description_rdf = Table(
    "description_rdf",
    metadata,
    Column("thing_id", ID_TYPE, primary_key=True),
    Column("revision", BigInteger, nullable=False),
    Column("ntriples", Text, nullable=False),
    # Remote @context URLs that are not available offline and were left out of the RDF.
    Column("unknown_contexts", JSONB, nullable=False),
    # Why no RDF could be computed (the description is stored and served all the same).
    Column("error", Text, nullable=True),
)

# -- discovery: the summary of every description, its capabilities, and its kept versions.

#: Text-search configuration of the summary's tsvector and of queries against it.
SEARCH_CONFIG = "english"

#: The vendor name's words, punctuation read as spaces (migration 0016_search_words).
VENDOR_WORDS = r"to_tsvector('simple'::regconfig, regexp_replace(coalesce(vendor_name, ''), '\W+', ' ', 'g'))"

thing_summaries = Table(
    "thing_summaries",
    metadata,
    Column("thing_id", ID_TYPE, primary_key=True),
    Column("kind", String(8), nullable=False),
    Column("title", Text, nullable=True),
    # lower(title): the sort key of ``sort=title``.
    Column("title_key", Text, nullable=False),
    Column("vendor_name", Text, nullable=True),
    # lower(vendor name): vendor filters are case-insensitive.
    Column("vendor_key", Text, nullable=True),
    # The vendor name's words (no stemming): vendor=telekom finds "Deutsche Telekom AG", vendor=io.github.redis
    # and vendor=redis find the MCP namespace "io.github.redis" (punctuation is read as spaces).
    Column(
        "vendor_words",
        TSVECTOR,
        Computed(VENDOR_WORDS, persisted=True),
        nullable=True,
    ),
    Column("version", Text, nullable=True),
    Column("types", ARRAY(Text), nullable=False),
    # The whole summary (capabilities with schemas, languages, lint warnings) as served by /summary.
    Column("summary", JSONB, nullable=False),
    Column("search", TSVECTOR, nullable=False),
    # How ``search`` was composed (registry.descriptions.summary.SEARCH_TEXTS): rows of another composition or
    # gazetteer have their words computed again by registry/projections/search_words.py; NULL for rows stored
    # before the column.
    Column("search_version", Text, nullable=True),
    # Every capability offered, as ``capability_keys()`` spells it: a capability filter is an index scan that
    # intersects with those of the other filters, instead of a probe of thing_capabilities per candidate row.
    Column("capability_keys", ARRAY(Text), nullable=False, server_default="{}"),
    # What kind, vendor and capability filters match, as keys of one GIN index (``filter_keys()``, migration
    # 0019_filter_keys): a search combining them is one index scan that skips to the rows matching every key.
    Column(
        "filter_keys",
        ARRAY(Text),
        Computed("thing_filter_keys(kind, vendor_name, capability_keys)", persisted=True),
        nullable=True,
    ),
    Index("ix_thing_summaries_kind", "kind"),
    Index("ix_thing_summaries_vendor_key", "vendor_key"),
    Index("ix_thing_summaries_vendor_words", "vendor_words", postgresql_using="gin"),
    Index("ix_thing_summaries_title_key", "title_key", "thing_id"),
    Index("ix_thing_summaries_types", "types", postgresql_using="gin"),
    Index("ix_thing_summaries_search", "search", postgresql_using="gin"),
    Index("ix_thing_summaries_capability_keys", "capability_keys", postgresql_using="gin"),
    Index("ix_thing_summaries_filter_keys", "filter_keys", postgresql_using="gin"),
)

#: How many parties hold each word ``pg_stats`` lists as frequent in ``thing_summaries.search``, as a share of the
#: parties (owners) in a sample of descriptions: one row, written by the statistics refresh after each ANALYZE of
#: the summaries (registry/store/statistics.py) and read with ``pg_stats`` by the need search, which weighs a word by
#: the lesser of its share of descriptions and its share of owners (registry/store/catalog/words.py).
word_owner_shares = Table(
    "word_owner_shares",
    metadata,
    # Always true: the table holds one row.
    Column("single", Boolean, primary_key=True),
    # The lexemes listed by pg_stats when counted, sorted, and the share of the sampled owners holding each.
    Column("lexemes", ARRAY(Text), nullable=False),
    Column("shares", ARRAY(Float), nullable=False),
    # Distinct owners and descriptions in the sample.
    Column("owners", Integer, nullable=False),
    Column("sampled", Integer, nullable=False),
    Column("counted", DateTime(timezone=True), nullable=False),
)

thing_capabilities = Table(
    "thing_capabilities",
    metadata,
    Column("thing_id", ID_TYPE, primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("source", String(8), nullable=False),
    Column("capability_id", Text, nullable=True),
    Column("name", Text, nullable=False),
    # lower(name): capability names match case-insensitively.
    Column("name_key", Text, nullable=False),
    Column("version", Text, nullable=True),
    # The vendor of the description (as its summary has it): resolution decides vendor rules and ranks vendor
    # preferences on the offers alone, and reads the descriptions of the page it answers only.
    Column("vendor_name", Text, nullable=True),
    # Covering: resolution reads a capability's offers from these alone (see catalog._bound_offers), those of one
    # version in provider order (a page of providers per version: catalog.resolution._ranked_page).
    Index(
        "ix_thing_capabilities_capability_id",
        "capability_id",
        "version",
        "thing_id",
        "position",
        postgresql_include=["name", "vendor_name"],
    ),
    Index(
        "ix_thing_capabilities_name_key",
        "name_key",
        "version",
        "thing_id",
        "position",
        postgresql_include=["capability_id", "name", "vendor_name"],
    ),
)

#: Every distinct version of a description, immutable; kept when the description is deleted or expires.
thing_versions = Table(
    "thing_versions",
    metadata,
    Column("thing_id", ID_TYPE, primary_key=True),
    Column("version", Text, primary_key=True),
    Column("document_text", Text, nullable=False),
    Column("registered", DateTime(timezone=True), nullable=False),
    Column("revision", BigInteger, nullable=False),
    Column("previous_version", Text, nullable=True),
    # The compatibility report against ``previous_version``: a registry.wire.Report, made by
    # registry.descriptions.compatibility.
    Column("compatibility", JSONB, nullable=True),
)

#: Requests counted against rate limits, per limited client and window, summed over every server process
#: (registry/auth/quotas.py). Unlogged: counts of the last minutes are not worth a WAL write each, and a crash of
#: PostgreSQL that empties the table only forgives some requests.
rate_counts = Table(
    "rate_counts",
    metadata,
    # What is limited, at which period, for whom: ``read:60:principal:key:alice``.
    Column("key", Text, primary_key=True),
    # The window's number: seconds since the epoch divided by the limit's period.
    Column("window_number", BigInteger, primary_key=True),
    Column("count", BigInteger, nullable=False),
    # Seconds since the epoch after which nobody reads the row (the end of the window after it).
    Column("expires", BigInteger, nullable=False),
    prefixes=["UNLOGGED"],
)
