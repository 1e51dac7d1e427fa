"""The one way to the database: ``Database``, an asyncpg pool plus one LISTEN connection per process.

Why one executor: every statement runs on the same pool, inside a transaction or not, so a process holds a fixed
number of connections (``REGISTRY_DB_POOL_SIZE``, the LISTEN connection included) and every driver error is
translated in one place (:func:`translated`) into a typed domain error; no asyncpg exception reaches a caller.

Statements are SQLAlchemy Core, written against :mod:`registry.store.tables`. Hot paths compile theirs once at
import (``Statement.of``: building and cache-keying a statement per request cost more CPU than the database work);
colder paths pass Core statements, compiled on use. SQLAlchemy's engine is not used at run time: only Alembic
(migrations) opens connections of its own, before the pool exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import asyncpg
import msgspec
from asyncpg.pool import PoolConnectionProxy
from asyncpg.transaction import Transaction as AsyncpgTransaction
from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect
from sqlalchemy.engine import make_url
from sqlalchemy.sql.expression import ClauseElement, text

from registry.errors import BadRequest, Conflict, DatabaseUnavailable, RegistryError, StatementTimeout

if TYPE_CHECKING:
    from registry.store.replica import ReadReplica

log = logging.getLogger(__name__)

APPLICATION_NAME = "lmos-registry"
#: Seconds a statement may run before the driver gives up on it (the server is told to cancel it).
COMMAND_TIMEOUT = 30.0
#: Seconds a streamed answer (which holds its connection while the client reads) waits for a pooled connection
#: before answering 503.
ACQUIRE_TIMEOUT = 10.0

#: Seconds a read on the read replica may take beyond its own bound before the replica is set aside.
REPLICA_GRACE = 1.0

#: The longest statement_timeout PostgreSQL accepts (an int of milliseconds, about 24.8 days).
_LONGEST_TIMEOUT_MS = 2**31 - 1

Record = asyncpg.Record
Isolation = Literal["read_committed", "repeatable_read", "serializable"]
Begun = TypeVar("Begun")
Read = TypeVar("Read")
_DIALECT = asyncpg_dialect.dialect()  # type: ignore[no-untyped-call]
_PING = text("SELECT 1")


@dataclasses.dataclass(frozen=True, slots=True)
class Statement:
    """A Core statement compiled to asyncpg's SQL (``$n`` parameters); asyncpg prepares and caches it."""

    sql: str
    names: tuple[str, ...]
    defaults: dict[str, Any]

    @classmethod
    def of(cls, statement: ClauseElement) -> Statement:
        compiled = statement.compile(dialect=_DIALECT, compile_kwargs={"render_postcompile": True})
        return cls(str(compiled), tuple(compiled.positiontup or ()), dict(compiled.params))  # type: ignore[attr-defined]

    def arguments(self, values: dict[str, Any]) -> list[Any]:
        """Positional arguments from named values (bound literals of the statement fill the rest)."""
        merged = {**self.defaults, **values}
        return [merged[name] for name in self.names]


Query = Statement | ClauseElement


def _compiled(query: Query) -> Statement:
    return query if isinstance(query, Statement) else Statement.of(query)


def driver_url(url: str, scheme: str = "postgresql") -> str:
    """Any PostgreSQL URL (``postgres://``, ``postgresql+asyncpg://``, …) with ``scheme``: the plain URL asyncpg
    takes, or ``postgresql+asyncpg`` for SQLAlchemy (Alembic)."""
    parsed = make_url(url)
    if parsed.get_backend_name() not in {"postgres", "postgresql"}:
        raise ValueError(f"not a PostgreSQL URL: {parsed.render_as_string(hide_password=True)}")
    return parsed.set(drivername=scheme).render_as_string(hide_password=False)


def without_password(url: str) -> str:
    """``url`` without its password: which database it names, to tell databases apart (a key, never a login)."""
    return make_url(url).set(password=None).render_as_string()


# -- driver errors, translated once

#: SQLSTATE classes and codes that only input can cause: the request is refused, the directory is fine.
_INPUT_ERRORS = {
    "22": "a value of the request cannot be stored",  # data exception (encoding, ranges, formats)
    "54": "a value of the request exceeds a limit of the database",  # program limit (index row size, …)
}
#: Why the database cannot serve, by SQLSTATE code or class (the first two characters), most precise first.
_UNAVAILABLE_STATES = {
    "53300": "the database refuses more connections (max_connections reached)",
    "57P01": "the database is shutting down",
    "57P02": "the database is restarting after a crash",
    "57P03": "the database is starting up or shutting down",
    "53": "the database is out of resources",
    "57": "the database stopped the statement (operator intervention)",
    "08": "the connection to the database failed",
    "28": "the database refused the credentials",
    "3D": "the database named in the URL does not exist",
}
#: A connection that was closed before a statement could run on it.
_CONNECTION_GONE = (asyncpg.ConnectionDoesNotExistError, asyncpg.InterfaceError, ConnectionError)


def _unavailable(reason: str) -> DatabaseUnavailable:
    return DatabaseUnavailable(f"{reason[0].upper()}{reason[1:]}; retry shortly")


def translate(error: BaseException) -> RegistryError | None:
    """The domain error a driver error stands for, or None for a bug (the caller re-raises it)."""
    if isinstance(error, RegistryError):
        return error
    if isinstance(error, asyncpg.PostgresError):
        return _translate_state(error, str(error.sqlstate or ""))
    if isinstance(error, TimeoutError):  # the driver's own bound on a statement (COMMAND_TIMEOUT)
        return StatementTimeout(f"The database did not answer within {COMMAND_TIMEOUT:g} s; retry shortly")
    # InternalClientError: a connection left mid-operation when the server went away (e.g. "cannot switch to state
    # 15; another operation is in progress" on a cursor's connection during an outage).
    if isinstance(
        error, asyncpg.InterfaceError | asyncpg.InternalClientError | OSError | asyncpg.PostgresConnectionError
    ):
        return _unavailable("the database is unreachable")
    return None


def _translate_state(error: asyncpg.PostgresError, state: str) -> RegistryError | None:
    if state == "57014":  # query_canceled: a statement timeout
        return StatementTimeout("The database did not answer in time (statement timeout); retry shortly")
    if state in {"40001", "40P01"}:  # serialization failure, deadlock: retrying succeeds
        return DatabaseUnavailable("The write collided with a concurrent one; retry it")
    if state == "23505":
        return Conflict("The write conflicts with an existing entry")
    if state[:2] in _INPUT_ERRORS:
        message = getattr(error, "message", None) or str(error)
        return BadRequest(f"The request was refused: {_INPUT_ERRORS[state[:2]]} ({message})")
    reason = _UNAVAILABLE_STATES.get(state) or _UNAVAILABLE_STATES.get(state[:2])
    return None if reason is None else _unavailable(reason)


_DRIVER_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError, OSError, TimeoutError)


def _domain(error: BaseException) -> BaseException:
    """What to raise for a driver error: its domain error, or the error itself when it means a bug."""
    return translate(error) or error


def raised_by_database(error: RegistryError) -> bool:
    """Whether ``error`` stands for a driver error (the transaction it happened in is lost), not a check's."""
    return isinstance(error.__cause__, _DRIVER_ERRORS)


@contextlib.contextmanager
def translated() -> Iterator[None]:
    try:
        yield
    except RegistryError:
        raise
    except _DRIVER_ERRORS as error:
        domain = translate(error)
        if domain is None:
            raise
        raise domain from error


# -- running statements


class Executor:
    """``fetch``/``fetchrow``/``fetchval``/``execute``, on the pool (each statement commits on its own) or in a
    transaction; the same calls either way."""

    async def _run(self, method: str, statement: Statement, arguments: list[Any]) -> Any:
        raise NotImplementedError

    async def fetch(self, query: Query, /, **values: Any) -> list[Record]:
        statement = _compiled(query)
        result: list[Record] = await self._run("fetch", statement, statement.arguments(values))
        return result

    async def fetchrow(self, query: Query, /, **values: Any) -> Record | None:
        statement = _compiled(query)
        result: Record | None = await self._run("fetchrow", statement, statement.arguments(values))
        return result

    async def fetchval(self, query: Query, /, **values: Any) -> Any:
        statement = _compiled(query)
        return await self._run("fetchval", statement, statement.arguments(values))

    async def execute(self, query: Query, /, **values: Any) -> None:
        statement = _compiled(query)
        await self._run("execute", statement, statement.arguments(values))

    async def fetchmany(self, query: Query, rows: Sequence[dict[str, Any]], /) -> list[Record]:
        """``query`` run once for each row of values, all in one round trip (asyncpg pipelines them): what a
        batch of writes costs is their execution, not a wait for the server per statement. The result rows of
        every run, in order (one each for a statement that returns one row)."""
        if not rows:
            return []
        statement = _compiled(query)
        result: list[Record] = await self._run(
            "fetchmany", statement, [[statement.arguments(values) for values in rows]]
        )
        return result


class Transaction(Executor):
    """Statements on one connection, inside one transaction (committed when its block ends without error)."""

    def __init__(self, connection: PoolConnectionProxy) -> None:
        self._connection = connection

    async def _run(self, method: str, statement: Statement, arguments: list[Any]) -> Any:
        with translated():
            return await getattr(self._connection, method)(statement.sql, *arguments)

    async def rows(self, query: Query, /, *, batch: int = 200, **values: Any) -> AsyncIterator[Record]:
        """Rows through a cursor of this transaction, ``batch`` at a time (see :meth:`Database.stream`)."""
        statement = _compiled(query)
        arguments = statement.arguments(values)
        with translated():
            async for row in self._connection.cursor(statement.sql, *arguments, prefetch=batch):
                yield row

    async def maintain(self, sql: str, seconds: float) -> None:
        """A maintenance statement without parameters (building an index) that may take up to ``seconds``, longer
        than the ``COMMAND_TIMEOUT`` every other statement is bound by."""
        with translated():
            await self._connection.execute(sql, timeout=seconds)


async def _init_connection(connection: asyncpg.Connection) -> None:
    """jsonb and json columns decode to Python values (msgspec) like SQLAlchemy's JSONB type did."""
    for name in ("jsonb", "json"):
        await connection.set_type_codec(
            name,
            schema="pg_catalog",
            encoder=lambda value: msgspec.json.encode(value).decode(),
            decoder=msgspec.json.decode,
        )


async def _reset(connection: asyncpg.Connection) -> None:
    """Statements here change no session state, so the pool's reset round trip on release is skipped (a
    transaction left open by an interrupted call is still rolled back)."""
    if connection.is_in_transaction():
        await connection.execute("ROLLBACK")


def _payload_to(on_payload: Callable[[str], None]) -> Callable[[Any, int, str, object], None]:
    """asyncpg's listener callback, passing on only the payload (always text for NOTIFY)."""
    return lambda _connection, _pid, _channel, payload: on_payload(str(payload))


@dataclasses.dataclass(slots=True)
class Listening:
    """A LISTEN connection: ``lost`` is set when the server or the network closes it."""

    connection: asyncpg.Connection
    lost: asyncio.Event

    async def lock(self, key: int) -> None:
        """Wait for the session advisory lock ``key``; held until released or the connection closes."""
        await self.connection.execute("SELECT pg_advisory_lock($1)", key)

    async def try_lock(self, key: int) -> bool:
        """Take the session advisory lock ``key`` if no other session holds it."""
        return bool(await self.connection.fetchval("SELECT pg_try_advisory_lock($1)", key))

    async def close(self) -> None:
        if not self.connection.is_closed():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.connection.close(), 2)
            if not self.connection.is_closed():
                self.connection.terminate()


#: Planner settings of client-driven searches (:meth:`Database.bounded_reads`). The catalogue's working set is in
#: memory: at the default random_page_cost of 4 the planner joins a filter's ~1,000 candidates to ``descriptions``
#: by reading all of it rather than by index lookups (1.1 is the usual value for SSDs and caches). A search's
#: best plan depends on its values (a vendor of 10 or of 10,000 descriptions): a cached generic plan, chosen after
#: five runs of the statement, is not. Both make a filtered search of a large catalogue several times faster
#: (docs/performance.md).
SEARCH_PLANNER = "SET LOCAL random_page_cost = 1.1; SET LOCAL plan_cache_mode = force_custom_plan"


class Database(Executor):
    """One pool of ``connections - 1`` and one LISTEN connection: ``connections`` is all this process holds (a
    database that is only read, ``listens=False``, pools them all)."""

    def __init__(self, url: str, *, connections: int, name: str = APPLICATION_NAME, listens: bool = True) -> None:
        if listens and connections < 2:
            raise ValueError("a process needs at least 2 database connections (one pooled, one for LISTEN)")
        if connections < 1:
            raise ValueError("a pool needs at least 1 connection")
        self.url = driver_url(url)
        self.connections = connections
        self.name = name
        self.listens = listens
        #: Where client-driven reads go while they keep up (``REGISTRY_DATABASE_READ_URL``; see run_search).
        self.replicas: tuple[ReadReplica, ...] = ()
        self._replica_turns = itertools.count()
        self._pool: asyncpg.Pool | None = None
        #: Callers inside ``acquire`` that have no connection yet (asyncpg exposes no count of its waiters).
        self._acquiring = 0

    @property
    def pool_size(self) -> int:
        return self.connections - 1 if self.listens else self.connections

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    async def open(self) -> None:
        with translated():
            self._pool = await asyncpg.create_pool(
                self.url,
                min_size=self.pool_size,
                max_size=self.pool_size,
                init=_init_connection,
                reset=_reset,
                command_timeout=COMMAND_TIMEOUT,
                server_settings={"application_name": self.name},
            )

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(pool.close(), 5)
            pool.terminate()

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise DatabaseUnavailable("The database is not connected (yet); retry shortly")
        return self._pool

    def usage(self) -> tuple[int, int]:
        """(connections in use, connections idle) of the pool."""
        if self._pool is None:
            return 0, 0
        idle = self._pool.get_idle_size()
        return self._pool.get_size() - idle, idle

    def waiting(self) -> int:
        """Callers waiting for a pooled connection."""
        return self._acquiring

    async def _acquire(self, wait: float | None = None) -> PoolConnectionProxy:
        """A pooled connection (within ``wait`` seconds, if given), counted in :meth:`waiting` until it is had."""
        pool = self.pool
        self._acquiring += 1
        try:
            return await pool.acquire(timeout=wait)
        finally:
            self._acquiring -= 1

    async def _run(self, method: str, statement: Statement, arguments: list[Any]) -> Any:
        # The hottest path of the directory (every GET): a plain try/except rather than ``translated()``, and no
        # acquire timeout: each cost several microseconds per call (statements keep their own timeout).
        pool = self.pool
        for attempt in range(2):
            try:
                # _acquire inlined: one coroutine less on the hottest path.
                self._acquiring += 1
                try:
                    connection = await pool.acquire()
                finally:
                    self._acquiring -= 1
                try:
                    return await getattr(connection, method)(statement.sql, *arguments)
                finally:
                    await pool.release(connection)
            except _CONNECTION_GONE as error:
                # A pooled connection the server closed (it restarted, or terminated the connection) and the pool
                # has not noticed yet fails on its first use; one more attempt gets a fresh connection.
                if attempt:
                    raise _domain(error) from error
            except _DRIVER_ERRORS as error:
                raise _domain(error) from error
        raise AssertionError("unreachable")

    async def _begin(
        self, begin: Callable[[PoolConnectionProxy], Awaitable[Begun]]
    ) -> tuple[PoolConnectionProxy, Begun]:
        """A pooled connection on which ``begin`` has opened a transaction."""
        for attempt in range(2):
            connection = await self._acquire()
            try:
                return connection, await begin(connection)
            except _CONNECTION_GONE:
                # As in _run: BEGIN found a connection the server had closed; nothing was done yet.
                await self.pool.release(connection)
                if attempt:
                    raise
            except BaseException:
                await self.pool.release(connection)
                raise
        raise AssertionError("unreachable")

    @contextlib.asynccontextmanager
    async def transaction(
        self, *, isolation: Isolation = "read_committed", readonly: bool = False
    ) -> AsyncIterator[Transaction]:
        """Statements of the block in one transaction, committed when the block ends without an exception.
        ``repeatable_read`` makes every statement of the block read the same snapshot."""

        async def begin(connection: PoolConnectionProxy) -> AsyncpgTransaction:
            transaction = connection.transaction(isolation=isolation, readonly=readonly)
            await transaction.start()
            return transaction

        with translated():
            connection, transaction = await self._begin(begin)
            try:
                try:
                    yield Transaction(connection)
                except BaseException:
                    with contextlib.suppress(Exception):
                        await transaction.rollback()
                    raise
                await transaction.commit()
            finally:
                await self.pool.release(connection)

    @contextlib.asynccontextmanager
    async def bounded_reads(self, seconds: float, planner: str = "") -> AsyncIterator[Transaction]:
        """Reads of the block in one read-only transaction in which PostgreSQL cancels any statement running
        longer than ``seconds`` (raising :class:`StatementTimeout`): client-driven queries whose cost the client
        chooses cannot hold a connection and a core for long. Planned per run (``SEARCH_PLANNER``, then the
        ``planner`` settings of the caller). ``SET LOCAL`` ends with the transaction, so the pooled connection keeps
        its default; BEGIN and SET share one round trip."""

        milliseconds = min(max(1, round(seconds * 1000)), _LONGEST_TIMEOUT_MS)
        settings = f"SET LOCAL statement_timeout = {milliseconds}; {SEARCH_PLANNER}; {planner}".rstrip("; ")

        async def begin(connection: PoolConnectionProxy) -> None:
            await connection.execute(f"BEGIN READ ONLY; {settings}")

        with translated():
            connection, _ = await self._begin(begin)
            try:
                try:
                    yield Transaction(connection)
                except BaseException:
                    with contextlib.suppress(Exception):
                        await connection.execute("ROLLBACK")
                    raise
                await connection.execute("COMMIT")
            finally:
                await self.pool.release(connection)

    async def run_search(
        self, work: Callable[[Transaction], Awaitable[Read]], *, seconds: float, planner: str = ""
    ) -> Read:
        """``work`` in :meth:`bounded_reads` (with the ``planner`` settings): on the read replica while it keeps up,
        else here (see :meth:`_replica_first`)."""

        async def on(database: Database) -> Read:
            async with database.bounded_reads(seconds, planner) as tx:
                return await work(tx)

        return await self._replica_first(on, statement_bound=seconds)

    async def fetch_for_search(self, query: Query, /, **values: Any) -> list[Record]:
        """``fetch`` of a scan that tolerates a short lag (a page of JSONPath search): on the read replica while
        it keeps up, else here (see :meth:`_replica_first`)."""
        return await self._replica_first(lambda database: database.fetch(query, **values))

    async def _replica_first(
        self, read: Callable[[Database], Awaitable[Read]], *, statement_bound: float | None = None
    ) -> Read:
        """``read`` on a read replica that serves (the least busy), else on this database. A replica that fails
        the read (unreachable, a conflict with its recovery, no answer in time) is set aside and the read runs on
        the next one, or here. This side bounds the wait too, so that a replica that stops answering does not hold
        the read: the read's own ``statement_bound`` (seconds; a statement timeout within it is the read's answer,
        not run again here), or else the replica's lag bound, plus ``REPLICA_GRACE``."""
        tried: list[ReadReplica] = []
        while (replica := self._serving_replica(tried)) is not None:
            tried.append(replica)
            wait = (replica.max_lag if statement_bound is None else statement_bound) + REPLICA_GRACE
            try:
                async with asyncio.timeout(wait):
                    answer = await read(replica.database)
                replica.on_read()
                return answer
            except StatementTimeout as error:
                if statement_bound is not None:
                    raise
                replica.set_aside(error)
            except TimeoutError:
                replica.set_aside(DatabaseUnavailable(f"it did not answer within {wait:g} s"))
            except DatabaseUnavailable as error:
                replica.set_aside(error)
        return await read(self)

    def _serving_replica(self, tried: Sequence[ReadReplica]) -> ReadReplica | None:
        """The least busy read replica that serves (taking turns among equals) but the ``tried`` ones, or None."""
        serving = [replica for replica in self.replicas if replica.serving and replica not in tried]
        if not serving:
            return None
        start = next(self._replica_turns) % len(serving)
        return min(serving[start:] + serving[:start], key=lambda replica: replica.busy)

    async def stream(self, query: Query, /, *, batch: int = 200, **values: Any) -> AsyncIterator[Record]:
        """Rows through a server-side cursor, ``batch`` at a time: large answers never sit in memory whole."""
        statement = _compiled(query)
        arguments = statement.arguments(values)
        with translated():
            pool = self.pool
            connection = await self._acquire(ACQUIRE_TIMEOUT)
            try:
                async with connection.transaction(readonly=True):
                    async for row in connection.cursor(statement.sql, *arguments, prefetch=batch):
                        yield row
            finally:
                await pool.release(connection)

    async def ping(self) -> None:
        """One round trip to the database (raises as any statement does when it does not answer)."""
        await self.fetchval(_PING)

    async def listen(self, channels: Mapping[str, Callable[[str], None]]) -> Listening:
        """The budget's dedicated LISTEN connection, calling ``channels[channel]`` with each notification's payload."""
        listening = await self.dedicated("listen")
        try:
            for channel, on_payload in channels.items():
                await listening.connection.add_listener(channel, _payload_to(on_payload))
        except BaseException:
            listening.connection.terminate()
            raise
        return listening

    async def dedicated(self, role: str) -> Listening:
        """A connection outside the pool (``application_name`` ``{name}-{role}``), for session state: a LISTEN,
        an advisory lock. ``lost`` is set when the server or the network closes it."""
        lost = asyncio.Event()
        with translated():
            connection = await asyncpg.connect(
                self.url, command_timeout=COMMAND_TIMEOUT, server_settings={"application_name": f"{self.name}-{role}"}
            )
        connection.add_termination_listener(lambda _connection: lost.set())
        return Listening(connection, lost)


__all__ = [
    "APPLICATION_NAME",
    "Database",
    "Executor",
    "Listening",
    "Query",
    "Record",
    "Statement",
    "Transaction",
    "driver_url",
    "translate",
    "translated",
    "without_password",
]
