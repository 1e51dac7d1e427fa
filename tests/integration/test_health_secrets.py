"""Public health answers name checks and their states, never what a check found: no URL (with or without its
credentials), address or path of the directory's configuration reaches an anonymous /readyz or /livez; an admin
sees the details, without any URL's credentials or query; the log has them the same way. In process."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client
from tests.support.keys import add_key

JWKS_URL = "http://jwks-user:jwks-password@127.0.0.1:9/keys/jwks.json?api_key=jwks-api-key"
SECRETS = ("jwks-user", "jwks-password", "jwks-api-key", "api_key")


async def test_readyz_never_shows_urls_addresses_paths_or_secrets_to_the_public(
    own_database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    admin = await add_key(own_database_url, "health-admin", ["admin"])
    data_dir = tmp_path / "registry-data-dir"
    settings = Settings(
        database_url=own_database_url,
        db_pool_size=3,
        data_dir=data_dir,
        auth_jwks=JWKS_URL,
        auth_jwt_issuer="https://issuer.example",
        auth_jwt_audience="registry",
    )
    caplog.set_level(logging.INFO)
    async with local_client(create_app(settings), timeout=60) as client:
        public = await client.get("/readyz")
        text = public.text
        assert public.json()["checks"]["identity_provider"] == {
            "ok": False,
            "state": "failing, not counted",
            "detail": "failing, not counted",
        }
        for hidden in (
            *SECRETS,
            "127.0.0.1",
            ":9",
            "jwks.json",
            own_database_url,
            "postgresql",
            str(tmp_path),
            "registry-data-dir",
        ):
            assert hidden not in text, hidden
        assert all(set(check) == {"ok", "state", "detail"} for check in public.json()["checks"].values())
        assert (await client.get("/livez")).text == '{"status":"alive"}'
        # Bad credentials are not an error for a probe: the public answer.
        assert (await client.get("/readyz", headers={"Authorization": "Bearer nonsense"})).text.count("127.0.0.1") == 0
        detailed = await client.get("/readyz", headers={"Authorization": f"Bearer {admin}"})
        detail = detailed.json()["checks"]["identity_provider"]["detail"]
        assert "cannot read the JWKS from http://127.0.0.1:9/keys/jwks.json?…" in detail
        for secret in SECRETS:
            assert secret not in detailed.text, secret
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "cannot read the JWKS from http://127.0.0.1:9/keys/jwks.json?…" in logged
    for secret in SECRETS:
        assert secret not in logged, secret
