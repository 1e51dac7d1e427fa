"""Searches on read replicas (``REGISTRY_DATABASE_READ_URL``): a real primary and hot standbys (streaming
replication), the real server process. A replica serves searches, facets, resolution and JSONPath while it is at
most ``REGISTRY_DB_READ_MAX_LAG`` behind; a replica that stalls (replay paused) or goes away is set aside and they
read another or the primary, until it catches up again. Everything else reads the primary: a client reads its own
writes. While the primary is down, a replica that had replayed everything keeps serving searches."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterator

import httpx
import pytest

from registry.store.database import Database
from registry.store.migrations import head_revision
from registry.store.replica import ReadReplica, replica_names
from tests.support.replicas import problem_once_probed
from tests.support.servers import ServerProcess, ThrowawayPostgres, admin_execute, free_port, wait_until
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


def _detail(base_url: str) -> str:
    return str(_replica_check(base_url)["detail"])


def _serving(base_url: str) -> bool:
    """Every read replica serves searches."""
    return "set aside" not in str(_replica_check(base_url)["detail"])


def _found(base_url: str, word: str) -> bool:
    page = httpx.get(base_url + "/api/v1/search", params={"q": word}, timeout=10)
    assert page.status_code == 200, page.text
    return len(page.json()["items"]) > 0


def _jsonpath_finds(base_url: str, thing_id: str) -> bool:
    answer = httpx.get(base_url + "/search/jsonpath", params={"query": f"$[?@.id=='{thing_id}'].id"}, timeout=10)
    assert answer.status_code == 200, answer.text
    return bool(answer.json() == [thing_id])


def _name(standby: ThrowawayPostgres) -> str:
    return replica_names([standby.url])[0]


def _lag_of(base_url: str) -> float:
    """Seconds the (one) replica is behind, as ``/readyz`` says; 0 when it does not say."""
    found = re.search(r"([0-9.]+) s behind", str(_replica_check(base_url)["detail"]))
    return float(found.group(1)) if found else 0.0


def _metrics(base_url: str) -> str:
    return httpx.get(base_url + "/metrics", timeout=5).text


def _reads_on(base_url: str, standby: ThrowawayPostgres) -> float:
    """Searches and scans the server ran on ``standby`` (``registry_read_replica_reads_total``)."""
    name = f'registry_read_replica_reads_total{{replica="{_name(standby)}"}} '
    lines = [line for line in _metrics(base_url).splitlines() if line.startswith(name)]
    return float(lines[0].removeprefix(name)) if lines else 0.0


def _register(base_url: str, thing_id: str, word: str) -> None:
    document = thing(f"Forecaster {word}", id=thing_id)
    response = httpx.put(f"{base_url}/things/{thing_id}", json=document, timeout=10)
    assert response.status_code == 201, response.text


def _serves(base_url: str, word: str) -> bool:
    """The replica serves searches, and they find ``word``."""
    return _serving(base_url) and _found(base_url, word)


def _register_replicated(base_url: str, thing_id: str, word: str) -> None:
    """Register, and wait until the replica serves searches and has the description."""
    _register(base_url, thing_id, word)
    wait_until(functools.partial(_serves, base_url, word), 30, f"the replica serves {thing_id}")


def test_searches_read_the_replica_while_it_keeps_up_and_the_primary_beyond(
    server: ServerProcess, clusters: tuple[ThrowawayPostgres, ThrowawayPostgres]
) -> None:
    base, standby = server.base_url, clusters[1]
    _register_replicated(base, "urn:test:replica:first", "zeppelinword")

    admin_execute(standby.url, "SELECT pg_wal_replay_pause()")
    try:
        # The look must come within the replica's bound, or the server has rightly set it aside. A loaded machine
        # can take that long now and then: the replica then replays the write, and another is looked at.
        took = []
        for word in ("quokkaword", "quollword", "kakapoword"):
            thing_id = f"urn:test:replica:second:{word}"
            written = time.monotonic()
            _register(base, thing_id, word)
            # The writer reads its write on the primary at once ...
            assert httpx.get(f"{base}/things/{thing_id}", timeout=10).status_code == 200
            # ... while searches still read the replica, which has not replayed it (it is less than MAX_LAG behind).
            stale = not _found(base, word) and not _jsonpath_finds(base, thing_id)
            # The server counts the lag from its last probe before the write (up to 0.5 s earlier): a margin of 1 s.
            took.append(time.monotonic() - written)
            if took[-1] < MAX_LAG - 1:
                break
            admin_execute(standby.url, "SELECT pg_wal_replay_resume()")
            wait_until(functools.partial(_serves, base, word), 30, f"the replica serves {thing_id}")
            admin_execute(standby.url, "SELECT pg_wal_replay_pause()")
        assert took[-1] < MAX_LAG - 1, f"too slow to look within the replica's bound in every attempt: {took}"
        # Whichever attempt looked in time decides: a search must not see the write there.
        assert stale, "a search saw a write the paused replica has not replayed: it did not read the replica"

        # Past the bound the replica is set aside: searches read the primary and find the write.
        wait_until(lambda: not _serving(base), MAX_LAG + 10, "the replica is set aside")
        # Set aside as soon as what it replayed is older than the bound; the next probe then says by how much.
        wait_until(lambda: "behind (bound 5 s)" in _detail(base), 10, "the probe reports the replica's lag")
        detail = _detail(base)
        assert "searches read the primary" in detail, detail
        assert "behind (bound 5 s)" in detail, detail
        assert _found(base, word)
        assert _jsonpath_finds(base, thing_id)
        assert f'registry_read_replica_serving{{replica="{_name(standby)}"}} 0.0' in _metrics(base)
    finally:
        admin_execute(standby.url, "SELECT pg_wal_replay_resume()")

    wait_until(lambda: _serving(base), 30, "the replica serves again once it caught up")
    assert _found(base, word)
    metrics, label = _metrics(base), f'{{replica="{_name(standby)}"}}'
    assert f"registry_read_replica_serving{label} 1.0" in metrics
    # The read pool's gauges, to size REGISTRY_DB_READ_POOL_SIZE by (no search is running now).
    assert f"registry_db_read_pool_in_use{label} 0.0" in metrics
    assert f"registry_db_read_pool_waiting{label} 0.0" in metrics


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


def test_searches_are_shared_among_several_replicas_and_one_that_stalls_is_set_aside(
    clusters: tuple[ThrowawayPostgres, ThrowawayPostgres],
) -> None:
    primary, first = clusters
    second = primary.standby()
    try:
        env = {"REGISTRY_DATABASE_READ_URL": f"{first.url}\n{second.url}", "REGISTRY_DB_READ_MAX_LAG": str(MAX_LAG)}
        with ServerProcess(primary.url, env) as process:
            base = process.base_url
            _register_replicated(base, "urn:test:replicas:first", "ibexword")
            before = _reads_on(base, first), _reads_on(base, second)
            for _ in range(10):
                assert _found(base, "ibexword")
            # One search at a time: each finds both idle, and they take turns.
            assert _reads_on(base, first) - before[0] >= 4, _metrics(base)
            assert _reads_on(base, second) - before[1] >= 4, _metrics(base)

            admin_execute(second.url, "SELECT pg_wal_replay_pause()")
            try:
                _register(base, "urn:test:replicas:second", "oryxword")
                wait_until(
                    lambda: str(_replica_check(base)["detail"]).startswith("1 of 2 serve searches"),
                    MAX_LAG + 10,
                    "the stalled replica is set aside",
                )
                detail = str(_replica_check(base)["detail"])
                assert f"{_name(second)}: set aside: " in detail, detail
                # Every search now reads the replica that keeps up: none misses the write.
                before = _reads_on(base, first), _reads_on(base, second)
                assert all(_found(base, "oryxword") for _ in range(6))
                assert _reads_on(base, first) == before[0] + 6
                assert _reads_on(base, second) == before[1]
            finally:
                admin_execute(second.url, "SELECT pg_wal_replay_resume()")
            wait_until(
                lambda: str(_replica_check(base)["detail"]).startswith("2 of 2 serve searches"), 30, "both serve again"
            )
    finally:
        second.destroy()


def test_while_the_primary_is_down_searches_read_a_replica_that_had_replayed_everything(
    server: ServerProcess, clusters: tuple[ThrowawayPostgres, ThrowawayPostgres]
) -> None:
    base, (primary, standby) = server.base_url, clusters
    _register_replicated(base, "urn:test:replica:fourth", "lemurword")

    primary.stop("immediate")
    try:
        wait_until(
            lambda: str(_replica_check(base)["detail"]).startswith("serves searches with what it has replayed"),
            30,
            "the replica serves without the primary",
        )
        # Discovery goes on: searches, resolution, facets and JSONPath answer from the replica ...
        before = _reads_on(base, standby)
        assert _found(base, "lemurword")
        assert _jsonpath_finds(base, "urn:test:replica:fourth")
        facets = httpx.get(base + "/api/v1/facets", timeout=10)
        assert facets.status_code == 200, facets.text
        assert _reads_on(base, standby) >= before + 3
        # ... while writes fail with a problem; the process stays ready, for searches (else a balancer would take
        # every process of the directory out of rotation, and nobody could search).
        refused = httpx.put(
            f"{base}/things/urn:test:replica:fifth", json=thing("Late", id="urn:test:replica:fifth"), timeout=30
        )
        assert refused.status_code == 503, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        ready = httpx.get(base + "/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
        assert ready.json()["status"] == "ready for searches only"
        database = ready.json()["checks"]["database"]
        assert database["ok"] is False
        assert database["detail"].endswith("(not counted: read replicas serve searches)"), database
    finally:
        primary.start()
    wait_until(
        lambda: str(_replica_check(base)["detail"]).startswith("serves searches, "), 30, "the lag is measured again"
    )
    _register_replicated(base, "urn:test:replica:sixth", "tapirword")


def test_while_the_primary_is_down_a_replica_that_lags_behind_is_not_read(
    server: ServerProcess, clusters: tuple[ThrowawayPostgres, ThrowawayPostgres]
) -> None:
    base, (primary, standby) = server.base_url, clusters
    _register_replicated(base, "urn:test:replica:seventh", "okapiword")

    admin_execute(standby.url, "SELECT pg_wal_replay_pause()")
    try:
        _register(base, "urn:test:replica:eighth", "dugongword")
        # A probe after the write has read the primary's position past it once the replica reads as behind.
        wait_until(lambda: _lag_of(base) >= 1.0, 30, "the paused replica reads as behind")
        primary.stop("immediate")
        try:
            wait_until(lambda: not _serving(base), 30, "the lagging replica is set aside")
            detail = str(_replica_check(base)["detail"])
            assert "the replica had not replayed all the primary had written" in detail, detail
            # The primary is down and the replica is behind it: a search fails rather than answer without the write.
            missed = httpx.get(base + "/api/v1/search", params={"q": "dugongword"}, timeout=30)
            assert missed.status_code == 503, missed.text
        finally:
            primary.start()
    finally:
        admin_execute(standby.url, "SELECT pg_wal_replay_resume()")
    wait_until(lambda: _serving(base) and _found(base, "dugongword"), 30, "the replica serves again")


async def test_a_replica_that_still_streams_from_a_primary_this_process_cannot_reach_is_not_read(
    clusters: tuple[ThrowawayPostgres, ThrowawayPostgres],
) -> None:
    """Only this process is cut off from the primary (here: a wrong address), which still takes writes and streams
    them to the replica: the replica would grow stale, so it is set aside."""
    _primary, standby = clusters
    unreachable = Database(f"postgresql://postgres@127.0.0.1:{free_port()}/postgres", connections=2)
    replica = ReadReplica(unreachable, standby.url, connections=1, max_lag=MAX_LAG, schema_revision=head_revision())
    assert (await problem_once_probed(replica)).endswith("but the replica still streams from it")
    assert not replica.serving
