"""Pushes the stored RDF to an external SPARQL store, following the change feed (see
:mod:`registry.sparql.worker.follower` for how changes are applied).

Each batch of changes is ONE SPARQL Update request: for every changed description ``DROP SILENT GRAPH g`` and, if
it is live, ``INSERT DATA { GRAPH g { … } }``, and at the end of a catch-up the position marker
(:func:`registry.sparql.store.store.state_update`), so that data and position move in one transaction of the store.
A store holding another database's copy, or none, is emptied (``DROP ALL``) and loaded in bulk: N-Quads POSTed
with the Graph Store Protocol (or ``INSERT DATA`` without a GSP endpoint), the marker written last.
"""

from __future__ import annotations

import logging

from registry.events.feed import ChangeFeed
from registry.ops.metrics import SPARQL_STORE_PUSHES
from registry.semantic.graphs import blank_nodes_apart, graph_name, rdf_problem
from registry.sparql.store.store import LAYOUT, SparqlStore, StoreState, state_update
from registry.sparql.worker.follower import ChangeFollower, SkippedDescriptions
from registry.store.database import Database

log = logging.getLogger(__name__)


class StorePusher(ChangeFollower):
    copy = "external SPARQL store"
    #: The other replicas compare the store's marker with the change log's latest sequence to know it holds every
    #: write acknowledged before a query: it must reach that sequence while an earlier one is still pending.
    records_settled = False

    def __init__(self, database: Database, feed: ChangeFeed, store: SparqlStore, identity: str) -> None:
        super().__init__(database, feed, identity)
        self.store = store
        #: The state the store holds as far as this pusher knows (it is the only writer while it holds the lock).
        self.state: StoreState | None = None
        #: Descriptions whose RDF does not parse: never sent (one would make the store refuse the whole request).
        #: Known to the replica that pushes, since it took over.
        self.skipped = SkippedDescriptions(self.copy)

    async def holds_its_copy(self) -> bool:
        """Whether the store still holds what this pusher wrote (nobody emptied it or restored a backup since)."""
        async with self._lock:  # no update of this pusher's in flight
            return await self.store.state() == self.state

    async def _position(self) -> int | None:
        self.state = await self.store.state()
        if self.state is not None and self.state.database == self.identity and self.state.layout == LAYOUT:
            return self.state.position
        if self.state is None:
            log.info("the external SPARQL store holds no copy of this database; building it")
        elif self.state.database == self.identity:
            log.warning("the external SPARQL store holds a copy of an older layout; rebuilding it")
        else:
            log.warning("the external SPARQL store holds a copy of another database (%s); rebuilding it", self.state)
        await self._clear()  # whatever a build that did not finish left
        return None

    async def _clear(self) -> None:
        await self.store.update("DROP ALL")
        self.state = None
        self.skipped.reasons.clear()

    def _loadable(self, thing_id: str, ntriples: str) -> bool:
        """Whether the RDF parses (checked here with the parser the local index loads with); else left out."""
        problem = rdf_problem(ntriples)
        if problem is not None:
            self.skipped.skip(thing_id, problem)
        return problem is None

    async def _load(self, rows: list[tuple[str, str]]) -> None:
        graphs = [
            (graph_name(thing_id), blank_nodes_apart(ntriples, f"d{number}x"))
            for number, (thing_id, ntriples) in enumerate(rows)
            if ntriples and self._loadable(thing_id, ntriples)
        ]
        await self.store.load(graphs)

    async def _write(self, gone: list[str], current: dict[str, str], position: int | None) -> None:
        operations = [f"DROP SILENT GRAPH {graph_name(thing_id)}" for thing_id in [*gone, *current]]
        inserts, left_out = self._inserts(current)
        operations += inserts
        if position is not None and self._marks(position, sending=bool(operations)):
            operations.append(state_update(StoreState(self.identity, position)))
        if not operations:
            return
        await self.store.update(" ;\n".join(operations))
        SPARQL_STORE_PUSHES.inc()
        self.skipped.taken(thing_id for thing_id in [*gone, *current] if thing_id not in left_out)
        if position is not None:
            self.state = StoreState(self.identity, position)

    def _inserts(self, current: dict[str, str]) -> tuple[list[str], set[str]]:
        """The ``INSERT DATA`` operations of the descriptions that have RDF, and the ids of those whose RDF does
        not parse (left out)."""
        inserts: list[str] = []
        left_out: set[str] = set()
        for number, (thing_id, ntriples) in enumerate(current.items()):
            if not ntriples:
                continue
            if not self._loadable(thing_id, ntriples):
                left_out.add(thing_id)
                continue
            # Blank node labels are scoped to the request (and may not recur across INSERT DATA operations).
            renamed = blank_nodes_apart(ntriples, f"d{number}x")
            inserts.append(f"INSERT DATA {{ GRAPH {graph_name(thing_id)} {{ {renamed} }} }}")
        return inserts, left_out

    def _marks(self, position: int, *, sending: bool) -> bool:
        """Whether the update records ``position``: when it moves the marker, or goes with anything sent."""
        return sending or self.state is None or self.state.position != position


__all__ = ["StorePusher"]
