"""All configuration in one place: :class:`Settings`, typed settings read from ``REGISTRY_*`` environment variables.

Its fields are declared group by group in the modules of this package (``server``, ``connections``, …); each
module also says how its variables are read (``PARSERS``). Every variable is listed (with its default) in the
README's configuration table, generated from the fields (``python -m registry.config --write README.md``).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from registry.config import (
    auth,
    connections,
    database,
    events,
    limits,
    operations,
    registrations,
    search,
    server,
    sparql,
)
from registry.config.fields import ENV_PREFIX, ConfigError

#: How each setting's ``REGISTRY_*`` variable is read, by field name.
PARSERS: dict[str, Callable[[str], Any]] = {
    **server.PARSERS,
    **connections.PARSERS,
    **database.PARSERS,
    **registrations.PARSERS,
    **search.PARSERS,
    **sparql.PARSERS,
    **events.PARSERS,
    **auth.PARSERS,
    **limits.PARSERS,
    **operations.PARSERS,
}


# A dataclass takes the fields of its bases from the last base to the first: the groups are listed in the reverse
# of the README's order so that the fields come in that order.
@dataclasses.dataclass(frozen=True, slots=True)
class Settings(
    operations.OperationSettings,
    limits.LimitSettings,
    auth.AuthSettings,
    events.EventSettings,
    sparql.SparqlSettings,
    search.SearchSettings,
    registrations.RegistrationSettings,
    database.DatabaseSettings,
    connections.ConnectionSettings,
    server.ServerSettings,
):
    """Runtime settings. Field names map to ``REGISTRY_<FIELD_NAME_UPPER>``; each field's group and description
    are in its metadata (:func:`registry.config.fields.setting`), and ``python -m registry.config`` renders them as
    the README's table."""

    @property
    def base_url(self) -> str:
        """The externally visible base URL, without a trailing slash."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def sparql_index_path(self) -> Path:
        return self.sparql_index_dir or self.data_dir / "sparql-index"

    @property
    def sparql_store(self) -> bool:
        """Whether SPARQL is answered by an external store (no local index, no query worker)."""
        return bool(self.sparql_store_query_url)

    @property
    def database_read_urls(self) -> tuple[str, ...]:
        """The read replicas' URLs (a URL holds no unescaped whitespace; libpq's multi-host form uses commas)."""
        return tuple(self.database_read_url.split())

    def __post_init__(self) -> None:
        self._check_read_replicas()
        if self.embeddings == "openai" and not (
            self.embeddings_url and self.embeddings_model and self.embeddings_dimensions
        ):
            raise ConfigError(
                "REGISTRY_EMBEDDINGS=openai needs REGISTRY_EMBEDDINGS_URL, REGISTRY_EMBEDDINGS_MODEL and "
                "REGISTRY_EMBEDDINGS_DIMENSIONS"
            )
        if bool(self.sparql_store_query_url) != bool(self.sparql_store_update_url):
            raise ConfigError(
                "REGISTRY_SPARQL_STORE_QUERY_URL and REGISTRY_SPARQL_STORE_UPDATE_URL are set together or not at all"
            )

    def _check_read_replicas(self) -> None:
        """Each read replica is named once by a PostgreSQL URL, and a replica's lag bound and pool can be kept."""
        urls = self.database_read_urls
        for url in urls:
            scheme = url.split("://")[0].split("+")[0]
            if scheme not in {"postgres", "postgresql"}:
                raise ConfigError(
                    f"REGISTRY_DATABASE_READ_URL must be a PostgreSQL URL (postgresql://…) per read replica, "
                    f"not {scheme[:20]}://…"
                )
        if len(set(urls)) < len(urls):
            raise ConfigError("REGISTRY_DATABASE_READ_URL names a read replica twice")
        if not math.isfinite(self.db_read_max_lag) or (urls and self.db_read_max_lag < 1):
            # Below a second the replica's lag (measured every 0.5 s) would keep it flapping.
            raise ConfigError("REGISTRY_DB_READ_MAX_LAG must be a finite number of seconds, at least 1")
        if urls and self.db_read_pool_size < 1:
            raise ConfigError("REGISTRY_DB_READ_POOL_SIZE must be at least 1 when REGISTRY_DATABASE_READ_URL is set")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from the environment; explicit ``overrides`` (e.g. CLI flags) win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            key = ENV_PREFIX + field.name.upper()
            raw = env.get(key)
            if raw is None and key + "_FILE" in env:
                # Secrets mounted as files (Docker/Compose secrets, Kubernetes secret volumes): REGISTRY_X_FILE.
                try:
                    raw = Path(env[key + "_FILE"]).read_text().strip()
                except OSError as error:
                    raise ConfigError(f"{key}_FILE: cannot read {env[key + '_FILE']}: {error.strerror}") from error
            if raw is None:
                continue
            parser = PARSERS[field.name]
            try:
                values[field.name] = parser(raw)
            except ValueError as error:
                raise ConfigError(f"{key}: {error}") from error
        values.update({name: value for name, value in overrides.items() if value is not None})
        return cls(**values)
