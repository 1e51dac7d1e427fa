"""REGISTRY_X_FILE: a setting read from a mounted secret file (Docker/Compose secrets, Kubernetes secret volumes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.config import ConfigError, Settings


def test_a_setting_is_read_from_its_file(tmp_path: Path) -> None:
    secret = tmp_path / "database-url"
    secret.write_text("postgresql://registry:s3cret@db/registry\n")
    settings = Settings.from_env({"REGISTRY_DATABASE_URL_FILE": str(secret)})
    assert settings.database_url == "postgresql://registry:s3cret@db/registry"


def test_the_variable_itself_wins_over_its_file(tmp_path: Path) -> None:
    secret = tmp_path / "database-url"
    secret.write_text("postgresql://from-file/db")
    settings = Settings.from_env(
        {"REGISTRY_DATABASE_URL": "postgresql://from-env/db", "REGISTRY_DATABASE_URL_FILE": str(secret)}
    )
    assert settings.database_url == "postgresql://from-env/db"


def test_an_unreadable_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="REGISTRY_DATABASE_URL_FILE"):
        Settings.from_env({"REGISTRY_DATABASE_URL_FILE": str(tmp_path / "missing")})


def test_a_file_value_is_parsed_like_the_variable(tmp_path: Path) -> None:
    (tmp_path / "port").write_text("nine")
    with pytest.raises(ConfigError, match="REGISTRY_PORT"):
        Settings.from_env({"REGISTRY_PORT_FILE": str(tmp_path / "port")})


def test_the_external_store_credentials_are_read_from_files(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("store-token\n")
    settings = Settings.from_env(
        {
            "REGISTRY_SPARQL_STORE_QUERY_URL": "http://store:7878/query",
            "REGISTRY_SPARQL_STORE_UPDATE_URL": "http://store:7878/update",
            "REGISTRY_SPARQL_STORE_TOKEN_FILE": str(tmp_path / "token"),
        }
    )
    assert settings.sparql_store
    assert settings.sparql_store_token == "store-token"


def test_an_external_store_needs_both_its_query_and_update_endpoints() -> None:
    with pytest.raises(ConfigError, match="REGISTRY_SPARQL_STORE_UPDATE_URL"):
        Settings.from_env({"REGISTRY_SPARQL_STORE_QUERY_URL": "http://store:7878/query"})


def test_the_read_replica_url_is_read_from_its_file(tmp_path: Path) -> None:
    (tmp_path / "read-url").write_text("postgresql://reader:s3cret@replica/registry\n")
    settings = Settings.from_env({"REGISTRY_DATABASE_READ_URL_FILE": str(tmp_path / "read-url")})
    assert settings.database_read_urls == ("postgresql://reader:s3cret@replica/registry",)


def test_several_read_replicas_are_named_one_per_line_or_separated_by_spaces(tmp_path: Path) -> None:
    (tmp_path / "read-urls").write_text(
        "postgresql://reader@replica-a/registry\npostgres://reader@replica-b/registry\n"
    )
    settings = Settings.from_env({"REGISTRY_DATABASE_READ_URL_FILE": str(tmp_path / "read-urls")})
    assert settings.database_read_urls == (
        "postgresql://reader@replica-a/registry",
        "postgres://reader@replica-b/registry",
    )
    # libpq's multi-host form (commas) stays one URL: one replica, whichever host answers.
    spaced = Settings.from_env({"REGISTRY_DATABASE_READ_URL": " postgresql://a,b/registry  postgresql://c/registry "})
    assert spaced.database_read_urls == ("postgresql://a,b/registry", "postgresql://c/registry")


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"REGISTRY_DATABASE_READ_URL": "mysql://replica/registry"}, "must be a PostgreSQL URL"),
        (
            {"REGISTRY_DATABASE_READ_URL": "postgresql://replica/registry mysql://other/registry"},
            "per read replica, not mysql://",
        ),
        (
            {"REGISTRY_DATABASE_READ_URL": "postgresql://replica/registry postgresql://replica/registry"},
            "names a read replica twice",
        ),
        (
            {"REGISTRY_DATABASE_READ_URL": "postgresql://replica/registry", "REGISTRY_DB_READ_POOL_SIZE": "0"},
            "REGISTRY_DB_READ_POOL_SIZE must be at least 1",
        ),
        ({"REGISTRY_DB_READ_MAX_LAG": "nan"}, "REGISTRY_DB_READ_MAX_LAG must be a finite number of seconds"),
        (
            {"REGISTRY_DATABASE_READ_URL": "postgresql://replica/registry", "REGISTRY_DB_READ_MAX_LAG": "0.5"},
            "REGISTRY_DB_READ_MAX_LAG must be a finite number of seconds, at least 1",
        ),
        (
            {"REGISTRY_EMBEDDINGS": "openai", "REGISTRY_EMBEDDINGS_URL": "http://embed/v1"},
            "REGISTRY_EMBEDDINGS=openai needs REGISTRY_EMBEDDINGS_URL",
        ),
    ],
)
def test_an_unusable_read_replica_setting_is_refused_at_start(environment: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.from_env(environment)


def test_a_lag_bound_below_a_second_is_kept_without_read_replicas() -> None:
    assert Settings.from_env({"REGISTRY_DB_READ_MAX_LAG": "0.5"}).db_read_max_lag == 0.5
