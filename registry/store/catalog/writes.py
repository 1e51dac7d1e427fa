"""The catalog's writes, inside the transaction of the descriptions they follow: a description's summary and
capability rows (and its first kept version) in one statement, their removal when it leaves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, Text, any_, bindparam, cast, delete, exists, func, literal_column, select, tuple_
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from registry.store.catalog.rows import CapabilityRow, NewVersion, SummaryRow, SummaryWrite
from registry.store.catalog.search import TEXT_CONFIG
from registry.store.database import Statement
from registry.store.tables import capability_keys, thing_capabilities, thing_summaries, thing_versions

#: Characters of a title kept in its sort key: a B-tree entry must stay under ~2.7 kB, whatever the title.
TITLE_KEY_LENGTH = 256


def _weighted(text: Any, weight: str) -> Any:
    # The weight is a "char" literal; a bound parameter would be sent as varchar, which setweight refuses.
    return func.setweight(func.to_tsvector(TEXT_CONFIG, text), literal_column(f"'{weight}'"))


def _write_summary_statement() -> Any:
    """Summary upsert, capability rows (the surplus deleted, the others upserted), the first version of a
    description, and the versions kept before: one statement. Upserts skip rows that would not change."""
    thing_id = bindparam("thing_id", type_=Text)
    # The description's vendor, on its summary and on each of its capability rows.
    vendor_name = bindparam("vendor_name", type_=Text)
    summary = pg_insert(thing_summaries).values(
        thing_id=thing_id,
        kind=bindparam("kind"),
        title=bindparam("title"),
        title_key=bindparam("title_key"),
        vendor_name=vendor_name,
        vendor_key=bindparam("vendor_key"),
        version=bindparam("version"),
        types=bindparam("types", type_=ARRAY(Text)),
        capability_keys=bindparam("capability_keys", type_=ARRAY(Text)),
        summary=cast(bindparam("summary", type_=Text), JSONB),
        search=_weighted(bindparam("title_text", type_=Text), "A")
        .op("||")(_weighted(bindparam("body_text", type_=Text), "B"))
        .op("||")(_weighted(bindparam("capability_text", type_=Text), "C"))
        .op("||")(_weighted(bindparam("example_text", type_=Text), "D")),
        search_version=bindparam("search_version", type_=Text),
    )
    summary = summary.on_conflict_do_update(
        index_elements=[thing_summaries.c.thing_id], **_changed(thing_summaries, summary.excluded, ["thing_id"])
    )
    names = bindparam("names", type_=ARRAY(Text))
    offered = func.unnest(
        bindparam("sources", type_=ARRAY(Text)),
        bindparam("capability_ids", type_=ARRAY(Text)),
        names,
        bindparam("name_keys", type_=ARRAY(Text)),
        bindparam("versions", type_=ARRAY(Text)),
    ).table_valued("source", "capability_id", "name", "name_key", "version", with_ordinality="ordinal")
    offered = offered.render_derived()
    capabilities = pg_insert(thing_capabilities).from_select(
        ["thing_id", "position", "source", "capability_id", "name", "name_key", "version", "vendor_name"],
        select(
            thing_id,
            offered.c.ordinal - 1,
            offered.c.source,
            offered.c.capability_id,
            offered.c.name,
            offered.c.name_key,
            offered.c.version,
            vendor_name,
        ),
    )
    capabilities = capabilities.on_conflict_do_update(
        index_elements=[thing_capabilities.c.thing_id, thing_capabilities.c.position],
        **_changed(thing_capabilities, capabilities.excluded, ["thing_id", "position"]),
    )
    surplus = delete(thing_capabilities).where(
        thing_capabilities.c.thing_id == thing_id, thing_capabilities.c.position >= func.cardinality(names)
    )
    first_version = bindparam("first_version", type_=Text)
    version = pg_insert(thing_versions).from_select(
        ["thing_id", "version", "document_text", "registered", "revision"],
        select(
            thing_id,
            first_version,
            bindparam("document_text", type_=Text),
            func.now(),
            bindparam("revision", type_=BigInteger),
        ).where(first_version.is_not(None), ~exists().where(thing_versions.c.thing_id == thing_id)),
    )
    version = version.on_conflict_do_nothing(index_elements=[thing_versions.c.thing_id, thing_versions.c.version])
    # Data-modifying CTEs run to completion whether or not the query reads them; the query sees the versions
    # as they were before the statement.
    return (
        select(func.array_agg(thing_versions.c.version))
        .where(thing_versions.c.thing_id == thing_id)
        .add_cte(
            summary.cte("summary"),
            surplus.cte("surplus"),
            capabilities.cte("capabilities"),
            version.cte("first_version"),
        )
    )


def _changed(table: Any, excluded: Any, key: list[str]) -> dict[str, Any]:
    """``set_`` and ``where`` of an ON CONFLICT DO UPDATE that leaves an unchanged row alone (generated columns
    follow by themselves)."""
    columns = [column.name for column in table.c if column.name not in key and column.computed is None]
    return {
        "set_": {name: excluded[name] for name in columns},
        "where": tuple_(*(table.c[name] for name in columns)).is_distinct_from(
            tuple_(*(excluded[name] for name in columns))
        ),
    }


WRITE_SUMMARY = Statement.of(_write_summary_statement())

REMOVE_SUMMARIES = Statement.of(
    delete(thing_summaries).where(thing_summaries.c.thing_id == any_(bindparam("ids", type_=ARRAY(Text))))
)
REMOVE_CAPABILITIES = Statement.of(
    delete(thing_capabilities).where(thing_capabilities.c.thing_id == any_(bindparam("ids", type_=ARRAY(Text))))
)


def summary_values(write: SummaryWrite) -> dict[str, Any]:
    """The parameters of :data:`WRITE_SUMMARY` for one description: its summary, capabilities and first version."""
    return {
        **_summary_row_values(write.row, write.capabilities),
        **_capability_values(write.capabilities),
        **_first_version_values(write.first_version),
    }


def _summary_row_values(row: SummaryRow, capabilities: Sequence[CapabilityRow]) -> dict[str, Any]:
    title_text, body_text, capability_text, example_text = row.search_texts
    return {
        "thing_id": row.thing_id,
        "kind": row.kind,
        "title": row.title,
        "title_key": (row.title or "").lower()[:TITLE_KEY_LENGTH],
        "vendor_name": row.vendor_name,
        "vendor_key": row.vendor_name.lower() if row.vendor_name else None,
        "version": row.version,
        "types": row.types,
        "capability_keys": [key for item in capabilities for key in capability_keys(item.capability_id, item.name)],
        "summary": row.summary_json,
        "title_text": title_text,
        "body_text": body_text,
        "capability_text": capability_text,
        "example_text": example_text,
        "search_version": row.search_version,
    }


def _capability_values(capabilities: Sequence[CapabilityRow]) -> dict[str, Any]:
    return {
        "sources": [capability.source for capability in capabilities],
        "capability_ids": [capability.capability_id for capability in capabilities],
        "names": [capability.name for capability in capabilities],
        "name_keys": [capability.name.lower() for capability in capabilities],
        "versions": [capability.version for capability in capabilities],
    }


def _first_version_values(first_version: NewVersion | None) -> dict[str, Any]:
    if first_version is None:
        return {"first_version": None, "document_text": None, "revision": None}
    return {
        "first_version": first_version.version,
        "document_text": first_version.document_text,
        "revision": first_version.revision,
    }


__all__ = ["REMOVE_CAPABILITIES", "REMOVE_SUMMARIES", "TITLE_KEY_LENGTH", "WRITE_SUMMARY", "summary_values"]
