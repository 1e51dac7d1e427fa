"""Which read replica a search goes to (``Database._serving_replica``), what it reports, and how replicas are
named."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any, cast

from registry.store.database import Database
from registry.store.replica import replica_names


@dataclasses.dataclass(eq=False)
class _Replica:
    name: str
    serving: bool = True
    busy: int = 0
    max_lag: float = 5.0
    answered: int = 0

    @property
    def database(self) -> str:
        return f"database of {self.name}"

    def on_read(self) -> None:
        self.answered += 1


def _database(*replicas: _Replica) -> Database:
    database = Database("postgresql://primary/registry", connections=2)
    database.replicas = cast("Any", replicas)
    return database


def test_idle_replicas_take_turns() -> None:
    database = _database(_Replica("a"), _Replica("b"), _Replica("c"))
    chosen = Counter(cast("_Replica", database._serving_replica(())).name for _ in range(30))
    assert chosen == {"a": 10, "b": 10, "c": 10}


def test_the_least_busy_replica_that_serves_is_chosen() -> None:
    a, b, c = _Replica("a", busy=3), _Replica("b", busy=1), _Replica("c", serving=False)
    database = _database(a, b, c)
    assert {database._serving_replica(()) for _ in range(5)} == {b}
    # One that failed the read is not tried again for it; none left: the primary.
    assert database._serving_replica([b]) is a
    assert database._serving_replica([a, b]) is None
    assert _database()._serving_replica(()) is None


async def test_a_read_a_replica_answers_is_reported_through_its_callback() -> None:
    replica = _Replica("a")
    database = _database(replica)

    async def read(on: Any) -> str:
        return f"read on the {on}"

    assert await database._replica_first(read) == "read on the database of a"
    assert replica.answered == 1


def test_replicas_are_named_without_credentials_and_told_apart() -> None:
    assert replica_names(
        [
            "postgresql://reader:s3cret@replica-a:5432/registry",
            "postgresql://other@replica-a:5432/registry",
            "postgresql:///registry?host=/run/postgresql&port=5433",
            "postgresql://replica-b/registry",
        ]
    ) == [
        "replica-a:5432/registry #1",
        "replica-a:5432/registry #2",
        "/run/postgresql:5433/registry",
        "replica-b/registry",
    ]
