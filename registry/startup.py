"""Starting what needs the database, however long the database takes to come.

A server process answers from the moment it starts: ``/livez`` at once, ``/readyz`` with 503 naming the database
while it is unreachable, every other request 503 with ``Retry-After``. Meanwhile it tries again with backoff (1 s,
doubling up to 30 s), one log line per failed attempt and no traceback (an outage is expected, not a bug), and
once the database answers it migrates the schema if told to (one process at a time) and starts the rest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from registry.errors import DatabaseUnavailable, RegistryError
from registry.store.database import Database
from registry.store.migrations import migrate, schema_revision

log = logging.getLogger(__name__)

FIRST_DELAY = 1.0
LONGEST_DELAY = 30.0
#: Session advisory lock that serialises migrations between the processes of ``--workers N`` and replicas.
MIGRATION_LOCK = 0x6C6D6F73_6D696772  # "lmosmigr"


def cause_of(error: RegistryError) -> str:
    """The error's detail with the driver's own words, in one line: what an operator needs to act."""
    detail = error.detail.removesuffix("; retry shortly")
    reason = detail[:1].lower() + detail[1:]
    cause = error.__cause__
    words = " ".join(str(cause).split()) if cause is not None else ""
    if cause is None or words in reason:
        return reason
    return f"{reason}: {words or type(cause).__name__}"


class DatabaseStartup:
    """Runs the start of what needs the database until it succeeds; ``problem`` says why it has not yet."""

    def __init__(self, first_delay: float = FIRST_DELAY, longest_delay: float = LONGEST_DELAY) -> None:
        self.first_delay = first_delay
        self.longest_delay = longest_delay
        #: None once started; until then what the last attempt met (for /readyz).
        self.problem: str | None = "connecting to the database"
        self.attempts = 0
        self.first_attempt = asyncio.Event()

    @property
    def started(self) -> bool:
        return self.problem is None

    async def run(self, attempt: Callable[[], Awaitable[None]]) -> None:
        """``attempt`` until it succeeds; it must undo what it started when it fails."""
        delay = self.first_delay
        while True:
            self.attempts += 1
            try:
                await attempt()
            except RegistryError as error:
                self.problem = f"{cause_of(error)}; attempt {self.attempts}, next in {delay:g} s"
                log.warning("the database is unavailable (%s); retrying in %g s", cause_of(error), delay)
            else:
                if self.attempts > 1:
                    log.info("the database is available; started after %d attempts", self.attempts)
                self.problem = None
                return
            finally:
                self.first_attempt.set()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.longest_delay)


async def migrate_if_behind(database: Database, head: str, *, jwt_issuer: str = "") -> None:
    """Bring the schema to ``head`` unless it is there; one process at a time (the others wait, then find it
    done; ``jwt_issuer`` as for :func:`registry.store.migrations.migrate`). Migration errors are the database's
    problem to report, not a crash of the process."""
    if await schema_revision(database) == head:
        return
    lock = await database.dedicated("migrate")
    try:
        await lock.lock(MIGRATION_LOCK)
        if await schema_revision(database) != head:
            log.info("migrating the database schema to %s", head)
            try:
                await asyncio.to_thread(migrate, database.url, jwt_issuer=jwt_issuer)
            except Exception as error:
                raise DatabaseUnavailable(f"migrating the schema to {head} failed") from error
    except OSError as error:
        raise DatabaseUnavailable("the database went away while migrating") from error
    finally:
        await lock.close()


__all__ = ["DatabaseStartup", "cause_of", "migrate_if_behind"]
