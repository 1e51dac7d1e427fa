"""Shared fixtures: a real PostgreSQL database per test session and a real server process."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The run's processes cache bytecode even where the environment turns it off (PYTHONDONTWRITEBYTECODE, as container
# images set it): without the cache, each test process rewrites the assertions of every test module and pytest
# plugin module it imports, and compiles them again, about 11 s of CPU each (docs/performance.md). The test
# processes pytest-xdist starts, and the servers, commands and workers the tests start, inherit this environment.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False

# Run from a clone without the README's install command, the first import below would fail with a bare
# ModuleNotFoundError: say what to do instead.
_NOT_INSTALLED = [name for name in ("httpx", "litestar", "asyncpg") if importlib.util.find_spec(name) is None]
if _NOT_INSTALLED:
    pytest.exit(
        f"the project's dependencies are not installed in this Python ({', '.join(_NOT_INSTALLED)} missing): "
        "run the README's install command first, pip install -e '.[dev]'",
        returncode=4,
    )

import httpx  # noqa: E402

from tests.support.identity import Identity, ServedJwks  # noqa: E402
from tests.support.ordering import longest_files_first  # noqa: E402
from tests.support.servers import ServerProcess, fresh_database, postgres_server  # noqa: E402
from tests.support.tls import share_the_default_context  # noqa: E402

share_the_default_context()

#: Files the tests read (real-world TDs with their MANIFEST, sources and licenses): all inside the repository.
DATA = Path(__file__).resolve().parent / "data"
REAL_TDS = DATA / "real-tds"


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist hands out files by number of tests unless told to keep the collection's order, which
    # ``pytest_collection_modifyitems`` makes longest first.
    if getattr(config.option, "loadscopereorder", None) is not None:
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    longest_files_first(items, config.rootpath)


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture(scope="session")
def database_url(postgres_admin_url: str) -> Iterator[str]:
    """One migrated database for the session, unique to this run."""
    with fresh_database(postgres_admin_url) as url:
        yield url


@pytest.fixture(scope="session")
def server(database_url: str) -> Iterator[ServerProcess]:
    # No purge during the session: tests assert on expired-but-not-yet-purged descriptions; tests of purging
    # start servers with a short REGISTRY_PURGE_INTERVAL on a database of their own (``own_database_url``).
    with ServerProcess(database_url, {"REGISTRY_PURGE_INTERVAL": "86400"}) as process:
        yield process


@pytest.fixture
def own_database_url(postgres_admin_url: str) -> Iterator[str]:
    """A migrated database for this test alone, for servers whose purges or writes must not reach others."""
    with fresh_database(postgres_admin_url) as url:
        yield url


@pytest.fixture(scope="session")
def base_url(server: ServerProcess) -> str:
    return server.base_url


@pytest.fixture
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30) as http:
        yield http


@pytest.fixture
def start_server(postgres_admin_url: str) -> Iterator[Callable[..., ServerProcess]]:
    """Start extra server processes (own settings, or replicas of one directory); all stopped after the test.

    Without ``database`` they share a database of this test alone, cloned from the migrated template: a server on
    the session's database would first index every description the earlier tests of this process left there. A test
    that reads what the session's ``server`` wrote passes ``database=database_url``.
    """
    started: list[ServerProcess] = []
    with contextlib.ExitStack() as databases:
        own: list[str] = []

        def start(env: dict[str, str] | None = None, *, database: str | None = None) -> ServerProcess:
            if database is None and not own:
                own.append(databases.enter_context(fresh_database(postgres_admin_url)))
            process = ServerProcess(database or own[0], env).start()
            started.append(process)
            return process

        yield start
        for process in started:
            process.close()


@pytest.fixture
def identity(tmp_path: Path) -> Identity:
    """A test identity provider: a key, its JWKS file, the tokens it signs."""
    return Identity(tmp_path)


@pytest.fixture
def jwks(identity: Identity) -> Iterator[ServedJwks]:
    """The identity provider's JWKS URL, served over HTTP."""
    served = ServedJwks(identity)
    yield served
    served.close()
