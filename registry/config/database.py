"""Settings of the group "Database": where PostgreSQL is, its pools, its read replicas."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from registry.config.fields import DATABASE, factory, setting
from registry.config.parsers import default_data_dir, non_negative, parse_bool, parse_path


@dataclasses.dataclass(frozen=True)
class DatabaseSettings:
    """The fields of :class:`registry.config.Settings` in the group ``DATABASE``; never made on its own."""

    # No slots of its own: Settings, which gathers the groups, has a slot per field (and no __dict__).
    __slots__ = ()

    database_url: str = setting(DATABASE, "", "PostgreSQL URL; empty = embedded PostgreSQL (`--database-url`).")
    data_dir: Path = setting(
        DATABASE,
        factory(default_data_dir),
        "Where the embedded PostgreSQL keeps its data (`--data-dir`), and the SPARQL index.",
        shown="user data dir",
    )
    migrate_on_start: bool = setting(
        DATABASE,
        True,
        "Apply migrations when `serve` starts (`--migrate/--no-migrate`), or when the database comes if it is down at "
        "start (docs/operations.md).",
    )
    db_pool_size: int = setting(
        DATABASE,
        10,
        "Database connections of a server process, its LISTEN connection included (minimum 2). Each replica's SPARQL "
        "worker holds 2 more.",
    )
    database_read_url: str = setting(
        DATABASE,
        "",
        "Streaming replicas of the database (a managed PostgreSQL's read replicas), several separated by spaces or "
        "newlines: searches, facets, capability resolution and JSONPath read the least busy one that keeps up, and go "
        "on reading one while the primary is down; writes and every other read stay on the primary (docs/scaling.md).",
    )
    db_read_pool_size: int = setting(
        DATABASE,
        8,
        "Connections of each server process to each read replica (searches there wait for these, not for the "
        "primary's).",
    )
    db_read_max_lag: float = setting(
        DATABASE,
        5.0,
        "Seconds a read replica may be behind the primary and still serve; beyond (or unreachable), those reads go to "
        "another or to the primary until it catches up.",
    )


#: How each field's ``REGISTRY_*`` variable is read.
PARSERS: dict[str, Callable[[str], Any]] = {
    "database_url": str,
    "data_dir": parse_path,
    "migrate_on_start": parse_bool,
    "db_pool_size": non_negative(int),
    "database_read_url": str,
    "db_read_pool_size": non_negative(int),
    "db_read_max_lag": non_negative(float),
}
