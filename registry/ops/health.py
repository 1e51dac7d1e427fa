"""Readiness: what a replica needs to serve every endpoint, checked on demand for ``/readyz``.

Liveness (``/livez``) only says the process answers; readiness says the replica should receive traffic: its
database answers and carries the schema this code expects, its external SPARQL store (if any) is up and caught up,
and its change feed is not lagging behind the change log by more than ``REGISTRY_READY_MAX_FEED_LAG`` seconds.
The local SPARQL worker is reported, never counted: while it catches up or restarts, the rest of the API serves
and SPARQL answers 503 with Retry-After, and the process is "ready, degraded". Read replicas
(``REGISTRY_DATABASE_READ_URL``) are reported, never counted against readiness: searches read the primary while
they are set aside. So are the identity provider's keys (``REGISTRY_AUTH_JWKS``): while they cannot be read, reads
and API keys still work, and only access tokens the directory cannot check get 503. The vectors of natural-language
search (``embeddings``) are reported, never counted: while they are backfilled, or where the database has no
pgvector, needs are answered by full text and the check is degraded; it leaves the process's status "ready" (a
directory on a PostgreSQL without pgvector answers every request it is asked, needs included).
While the primary is down and a read replica serves searches without it (:mod:`registry.store.replica`), the
process stays ready, for searches: the checks that fail with the primary are reported and not counted.

What a check found (an error, an address, a path) is the operator's: ``/readyz`` tells everyone the name and state
of each check, and the details only to an admin; each detail of a failing check is logged when it changes. Details
never carry a URL's credentials or query (registry/redaction.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from registry.auth.tokens import TokenVerifier
from registry.errors import RegistryError
from registry.events.feed import ChangeFeed
from registry.redaction import redact_urls
from registry.sparql.query import SparqlBackend
from registry.store.database import Database
from registry.store.migrations import recorded_revision
from registry.store.replica import ReadReplica

log = logging.getLogger(__name__)
if TYPE_CHECKING:
    from registry.embeddings.indexer import VectorIndexer
    from registry.projections.search_words import SearchWordsRefresh
    from registry.startup import DatabaseStartup

#: Seconds the database check may take before it counts as failed.
DATABASE_CHECK_TIMEOUT = 2.0
#: Seconds the SPARQL worker has to tell what its index leaves out (the check passes without it).
STATS_TIMEOUT = 1.0
#: The checks that fail with the primary (the SPARQL worker is restarted until it can follow the change log).
_PRIMARY_CHECKS = {"database", "sparql_worker", "change_feed"}


@dataclasses.dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    #: Whether a failure makes the process unready.
    counts: bool = True
    #: Passing, but serving less than everything (the SPARQL index leaves out descriptions it cannot load).
    degraded: bool = False
    #: Whether a degraded state makes the process "ready, degraded" (the vectors' check does not).
    degrades_status: bool = True

    @property
    def state(self) -> str:
        """What anyone may know of the check: ok, degraded or failing (and whether that counts), nothing it found."""
        if self.ok:
            return "degraded" if self.degraded else "ok"
        return "failing" if self.counts else "failing, not counted"

    def shown(self, detailed: bool) -> dict[str, Any]:
        """The check as ``/readyz`` shows it: to an admin with its detail, to anyone else with its state only."""
        return {"ok": self.ok, "state": self.state, "detail": redact_urls(self.detail) if detailed else self.state}


class Readiness:
    """The checks behind ``/readyz``; each names what failed so that an operator knows where to look."""

    def __init__(
        self,
        database: Database,
        worker: SparqlBackend,
        feed: ChangeFeed,
        *,
        schema_revision: str,
        max_feed_lag: float,
        tokens: TokenVerifier | None = None,
        startup: DatabaseStartup | None = None,
        vectors: VectorIndexer | None = None,
        search_words: SearchWordsRefresh | None = None,
    ) -> None:
        self.database = database
        self.startup = startup
        self.worker = worker
        self.feed = feed
        self.schema_revision = schema_revision
        self.max_feed_lag = max_feed_lag
        self.tokens = tokens
        self.vectors = vectors
        self.search_words = search_words
        #: The detail last logged of each failing check (a failing check is logged when its detail changes).
        self._logged: dict[str, str] = {}

    async def checks(self) -> list[Check]:
        """Every check, each failure logged once per detail (probes ask every few seconds)."""
        checks = await self._checks()
        for check in checks:
            if check.ok:
                if self._logged.pop(check.name, None) is not None:
                    log.info("readiness check %s passes again", check.name)
            elif self._logged.get(check.name) != check.detail:
                self._logged[check.name] = check.detail
                log.warning("readiness check %s fails: %s", check.name, redact_urls(check.detail))
        return checks

    async def _checks(self) -> list[Check]:
        checks = [await self._database(), await self._sparql_worker(), self._change_feed(), *self._part_checks()]
        if self.database.replicas:
            checks.append(_read_replicas(self.database.replicas))
            if any(replica.serving and replica.primary_unreachable for replica in self.database.replicas):
                checks = _through_failover(checks)
        return checks

    def _part_checks(self) -> list[Check]:
        """The checks of the optional parts this process runs with (never counted: the API serves without them)."""
        checks = []
        for name, part in (("embeddings", self.vectors), ("search_words", self.search_words)):
            if part is not None:
                degraded, detail = part.state()
                checks.append(Check(name, True, detail, counts=False, degraded=degraded, degrades_status=False))
        if self.tokens is not None:
            checks.append(Check("identity_provider", self.tokens.problem is None, self.tokens.state(), counts=False))
        return checks

    async def _database(self) -> Check:
        if self.startup is not None and self.startup.problem is not None:
            return Check("database", False, f"not started: {self.startup.problem}")
        try:
            async with asyncio.timeout(DATABASE_CHECK_TIMEOUT):
                revision = await recorded_revision(self.database)
        except TimeoutError:
            return Check("database", False, f"did not answer within {DATABASE_CHECK_TIMEOUT:g} s")
        except RegistryError as error:
            return Check("database", False, error.detail)
        if revision != self.schema_revision:
            return Check(
                "database", False, f"schema at revision {revision}, this code needs {self.schema_revision}; migrate"
            )
        return Check("database", True, f"reachable, schema at {revision}")

    async def _sparql_worker(self) -> Check:
        if self.worker.idle:
            return Check("sparql_worker", True, "idle: the first SPARQL query starts it (REGISTRY_SPARQL_START)")
        problem = self.worker.unready_reason()
        # Ready once it has caught up at start; after that a bulk import may put it behind for a while, and a query
        # waits for the writes before it (or is told to retry), so this does not claim it is caught up. While the
        # local worker catches up or restarts, the rest of the API serves: reported (failing, not counted).
        if problem is not None:
            if not self.worker.unready_counts:
                problem += "; SPARQL queries are answered 503 with Retry-After meanwhile"
            return Check("sparql_worker", False, problem, self.worker.unready_counts)
        skipped = await self._skipped_descriptions()
        if skipped:
            return Check(
                "sparql_worker",
                True,
                f"up, answering queries; degraded: {skipped} description{'s' if skipped != 1 else ''} left out of "
                "the index because their RDF cannot be loaded (their ids are in the log; "
                "registry_sparql_index_skipped_descriptions)",
                degraded=True,
            )
        return Check("sparql_worker", True, "up, answering queries")

    async def _skipped_descriptions(self) -> int:
        """Descriptions the SPARQL index leaves out (0 when its worker does not tell in time)."""
        try:
            async with asyncio.timeout(STATS_TIMEOUT):
                stats = await self.worker.stats()
        except (RegistryError, TimeoutError):
            return 0
        return int(stats.get("skippedDescriptions", 0))

    def _change_feed(self) -> Check:
        lag = self.feed.lag
        if lag > self.max_feed_lag:
            return Check("change_feed", False, f"{lag:.1f} s behind the change log (bound {self.max_feed_lag:g} s)")
        return Check("change_feed", True, f"{lag:.1f} s behind the change log")


def status(checks: Sequence[Check]) -> str:
    """The one-word summary of checks that let the process serve (none failing that counts)."""
    if all(check.ok for check in checks):
        return "ready, degraded" if any(check.degraded and check.degrades_status for check in checks) else "ready"
    if any(check.name == "database" and not check.ok for check in checks):
        return "ready for searches only"  # the primary is down: only a read replica's searches are served
    return "ready, degraded"


def _through_failover(checks: list[Check]) -> list[Check]:
    """``checks`` during discovery through a failover: the primary is down (its own replicas lost it too), searches
    read a replica, and every other endpoint answers 503 with Retry-After meanwhile, so the primary's failing checks
    are not counted."""
    return [
        dataclasses.replace(check, counts=False, detail=f"{check.detail} (not counted: read replicas serve searches)")
        if check.name in _PRIMARY_CHECKS and not check.ok
        else check
        for check in checks
    ]


def _read_replicas(replicas: Sequence[ReadReplica]) -> Check:
    """One check for every read replica; never makes the process unready: searches read the primary while every
    replica is set aside."""
    states = [_read_replica_state(replica) for replica in replicas]
    serving = sum(replica.serving for replica in replicas)
    elsewhere = "" if serving else "; searches read the primary"
    if len(replicas) == 1:
        return Check("read_replica", True, states[0] + elsewhere)
    named = "; ".join(f"{replica.name}: {state}" for replica, state in zip(replicas, states, strict=True))
    return Check("read_replica", True, f"{serving} of {len(replicas)} serve searches{elsewhere}; {named}")


def _read_replica_state(replica: ReadReplica) -> str:
    if not replica.serving:
        return f"set aside: {replica.problem or 'its last measurement is older than the bound'}"
    if replica.primary_unreachable is not None:
        return f"serves searches with what it has replayed; the primary is unreachable ({replica.primary_unreachable})"
    return f"serves searches, {replica.lag or 0:.1f} s behind the primary"


__all__ = ["Check", "Readiness", "status"]
