"""Readiness's checks, in process with stand-ins: their order, the optional parts' checks, and a failover's."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

from registry.ops.health import Check, Readiness


def _readiness(*, replicas: list[Any], parts: bool) -> Readiness:
    database = SimpleNamespace(replicas=replicas)
    worker = SimpleNamespace(idle=False, unready_reason=lambda: "catching up", unready_counts=True)
    feed = SimpleNamespace(lag=0.5)
    extra: dict[str, Any] = {}
    if parts:
        extra = {
            "vectors": SimpleNamespace(state=lambda: (True, "vectors behind")),
            "search_words": SimpleNamespace(state=lambda: (False, "words current")),
            "tokens": SimpleNamespace(problem="unreachable", state=lambda: "keys unknown"),
        }
    return Readiness(
        cast(Any, database),
        cast(Any, worker),
        cast(Any, feed),
        schema_revision="r1",
        max_feed_lag=10.0,
        startup=cast(Any, SimpleNamespace(problem="no database")),
        **extra,
    )


def _replica(*, unreachable: str | None) -> Any:
    return SimpleNamespace(name="r", serving=True, primary_unreachable=unreachable, problem=None, lag=0.2)


def test_every_check_in_order_with_the_optional_parts() -> None:
    checks = asyncio.run(_readiness(replicas=[], parts=True).checks())
    assert [check.name for check in checks] == [
        "database",
        "sparql_worker",
        "change_feed",
        "embeddings",
        "search_words",
        "identity_provider",
    ]
    embeddings, words, identity = checks[3:]
    assert embeddings == Check("embeddings", True, "vectors behind", counts=False, degraded=True, degrades_status=False)
    assert words == Check("search_words", True, "words current", counts=False, degraded=False, degrades_status=False)
    assert identity == Check("identity_provider", False, "keys unknown", counts=False)
    assert checks[0] == Check("database", False, "not started: no database")


def test_a_replica_that_serves_adds_its_check_and_leaves_the_primary_checks_counted() -> None:
    checks = asyncio.run(_readiness(replicas=[_replica(unreachable=None)], parts=False).checks())
    assert [check.name for check in checks] == ["database", "sparql_worker", "change_feed", "read_replica"]
    assert checks[0].counts
    assert checks[1].counts


def test_through_a_failover_the_failing_primary_checks_do_not_count() -> None:
    checks = asyncio.run(_readiness(replicas=[_replica(unreachable="refused")], parts=False).checks())
    assert [check.name for check in checks] == ["database", "sparql_worker", "change_feed", "read_replica"]
    database, worker, feed, replica = checks
    assert not database.counts
    assert database.detail == ("not started: no database (not counted: read replicas serve searches)")
    assert not worker.counts
    assert worker.detail.endswith("(not counted: read replicas serve searches)")
    assert feed.ok
    assert feed.counts
    assert feed.detail == "0.5 s behind the change log"
    assert replica.ok
    assert "primary is unreachable (refused)" in replica.detail
