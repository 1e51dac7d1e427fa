"""Searches on a read replica (``REGISTRY_DATABASE_READ_URL``): a real primary and hot standby (streaming
replication), the real server process. The replica serves searches, facets, resolution and JSONPath while it is at
most ``REGISTRY_DB_READ_MAX_LAG`` behind; a replica that stalls (replay paused) or goes away is set aside and they
read the primary, until it catches up again. Everything else reads the primary: a client reads its own writes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.servers import ServerProcess, ThrowawayPostgres, admin_execute, wait_until
from tests.support.things import thing

MAX_LAG = 5


@pytest.fixture(scope="module")
def clusters() -> Iterator[tuple[ThrowawayPostgres, ThrowawayPostgres]]:
    if not ThrowawayPostgres.available():
        pytest.skip("PostgreSQL 15 binaries (initdb, pg_ctl, pg_basebackup) are not installed")
    with ThrowawayPostgres.migrated() as primary:
        standby = primary.standby()
        try:
            yield primary, standby
        finally:
            standby.destroy()


@pytest.fixture
def server(clusters: tuple[ThrowawayPostgres, ThrowawayPostgres]) -> Iterator[ServerProcess]:
    primary, standby = clusters
    env = {"REGISTRY_DATABASE_READ_URL": standby.url, "REGISTRY_DB_READ_MAX_LAG": str(MAX_LAG)}
    with ServerProcess(primary.url, env) as process:
        yield process


def _replica_check(base_url: str) -> dict[str, object]:
    ready = httpx.get(base_url + "/readyz", timeout=5)
    # Reported whether or not the process is ready (the SPARQL index may still be catching up), never counted.
    assert ready.status_code in (200, 503), ready.text
    assert ready.json()["checks"]["read_replica"]["ok"] is True
    check: dict[str, object] = ready.json()["checks"]["read_replica"]
    return check


def _serving(base_url: str) -> bool:
    return str(_replica_check(base_url)["detail"]).startswith("serves searches")


def _found(base_url: str, word: str) -> bool:
    page = httpx.get(base_url + "/api/v1/search", params={"q": word}, timeout=10)
    assert page.status_code == 200, page.text
    return len(page.json()["items"]) > 0


def _jsonpath_finds(base_url: str, thing_id: str) -> bool:
    answer = httpx.get(base_url + "/search/jsonpath", params={"query": f"$[?@.id=='{thing_id}'].id"}, timeout=10)
    assert answer.status_code == 200, answer.text
    return bool(answer.json() == [thing_id])


def _register(base_url: str, thing_id: str, word: str) -> None:
    document = thing(f"Forecaster {word}", id=thing_id)
    response = httpx.put(f"{base_url}/things/{thing_id}", json=document, timeout=10)
    assert response.status_code == 201, response.text


def _register_replicated(base_url: str, thing_id: str, word: str) -> None:
    """Register, and wait until the replica serves searches and has the description."""
    _register(base_url, thing_id, word)
    wait_until(lambda: _serving(base_url) and _found(base_url, word), 30, f"the replica serves {thing_id}")


def test_searches_read_the_replica_while_it_keeps_up_and_the_primary_beyond(
    server: ServerProcess, clusters: tuple[ThrowawayPostgres, ThrowawayPostgres]
) -> None:
    base, standby = server.base_url, clusters[1]
    _register_replicated(base, "urn:test:replica:first", "zeppelinword")

    admin_execute(standby.url, "SELECT pg_wal_replay_pause()")
    try:
        written = time.monotonic()
        _register(base, "urn:test:replica:second", "quokkaword")
        # The writer reads its write on the primary at once ...
        assert httpx.get(f"{base}/things/urn:test:replica:second", timeout=10).status_code == 200
        # ... while searches still read the replica, which has not replayed it (it is less than MAX_LAG behind).
        stale = not _found(base, "quokkaword") and not _jsonpath_finds(base, "urn:test:replica:second")
        # The server counts the lag from its last probe before the write (up to 0.5 s earlier): a margin of 1 s.
        assert time.monotonic() - written < MAX_LAG - 1, "too slow to look within the replica's bound"
        assert stale, "a search saw a write the paused replica has not replayed: it did not read the replica"

        # Past the bound the replica is set aside: searches read the primary and find the write.
        wait_until(lambda: not _serving(base), MAX_LAG + 10, "the replica is set aside")
        detail = str(_replica_check(base)["detail"])
        assert "searches read the primary" in detail, detail
        assert "behind (bound 5 s)" in detail, detail
        assert _found(base, "quokkaword")
        assert _jsonpath_finds(base, "urn:test:replica:second")
        assert "registry_read_replica_serving 0.0" in httpx.get(base + "/metrics", timeout=5).text
    finally:
        admin_execute(standby.url, "SELECT pg_wal_replay_resume()")

    wait_until(lambda: _serving(base), 30, "the replica serves again once it caught up")
    assert _found(base, "quokkaword")
    metrics = httpx.get(base + "/metrics", timeout=5).text
    assert "registry_read_replica_serving 1.0" in metrics
    # The read pool's gauges, to size REGISTRY_DB_READ_POOL_SIZE by (no search is running now).
    assert "registry_db_read_pool_in_use 0.0" in metrics
    assert "registry_db_read_pool_waiting 0.0" in metrics


def test_a_replica_that_goes_away_is_set_aside(
    server: ServerProcess, clusters: tuple[ThrowawayPostgres, ThrowawayPostgres]
) -> None:
    base, standby = server.base_url, clusters[1]
    _register_replicated(base, "urn:test:replica:third", "wombatword")

    standby.stop("immediate")
    try:
        # Searches never fail for the replica's sake: the first one after it went away falls back by itself.
        assert _found(base, "wombatword")
        wait_until(lambda: not _serving(base), 30, "the replica is set aside")
        detail = str(_replica_check(base)["detail"])
        assert "unreachable" in detail or "a read failed on it" in detail, detail
        facets = httpx.get(base + "/api/v1/facets", timeout=10)
        assert facets.status_code == 200, facets.text
    finally:
        standby.start()
    wait_until(lambda: _serving(base), 30, "the replica serves again once it is back")
    assert _found(base, "wombatword")
