"""The identity provider's JWKS URL as an operator lives with it: down when the directory starts, down for a while
after keys were fetched, rotating keys in and out (registry/auth/tokens.py). Against a real HTTP server."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from registry.auth.tokens import TokenVerifier
from registry.config import ConfigError, Settings
from registry.errors import ServiceUnavailable, Unauthorized
from tests.support.identity import AUDIENCE, ISSUER, Identity, ServedJwks, public_jwk


def verifier_of(source: str) -> TokenVerifier:
    """A verifier of the test identity provider's tokens, its keys read from ``source`` (a file or a URL)."""
    return TokenVerifier(Settings(auth_jwks=source, auth_jwt_issuer=ISSUER, auth_jwt_audience=AUDIENCE))


@pytest.fixture
async def verifier(jwks: ServedJwks) -> AsyncIterator[TokenVerifier]:
    verifier = verifier_of(jwks.url)
    yield verifier
    await verifier.stop()


async def test_an_identity_provider_down_at_start_delays_tokens_not_the_directory(
    identity: Identity, jwks: ServedJwks, verifier: TokenVerifier
) -> None:
    verifier.retry_delay = 0.2
    jwks.failing = True
    await verifier.start()  # does not raise: the directory starts
    assert verifier.problem is not None
    assert "503" in verifier.problem
    assert "no keys yet" in verifier.problem
    with pytest.raises(ServiceUnavailable) as refused:
        await verifier.verify(identity.token("alice"))
    assert refused.value.headers["Retry-After"]
    assert "cannot be checked now" in refused.value.detail
    # Retried in the background, with backoff, until the identity provider answers.
    jwks.failing = False
    for _ in range(200):
        if verifier.problem is None:
            break
        await asyncio.sleep(0.05)
    assert verifier.problem is None
    assert (await verifier.verify(identity.token("alice"))).name == "alice"


async def test_keys_fetched_before_an_outage_still_check_tokens(
    identity: Identity, jwks: ServedJwks, verifier: TokenVerifier
) -> None:
    await verifier.start()
    assert verifier.problem is None
    assert jwks.fetches == 1
    jwks.failing = True
    await verifier.refresh()
    assert verifier.problem is not None
    assert "keeping the keys read before" in verifier.problem
    assert (await verifier.verify(identity.token("alice"))).name == "alice"
    # A key id it has not seen cannot be checked while the keys cannot be fetched: retry, not "your token is bad".
    unknown = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(ServiceUnavailable):
        await verifier.verify(identity.token("bob", key=unknown, kid="test-9"))
    # Once the identity provider answers, a key id it does not list is refused.
    jwks.failing = False
    await verifier.refresh()
    with pytest.raises(Unauthorized, match="no RS256 signing key with id 'test-9'"):
        await verifier.verify(identity.token("bob", key=unknown, kid="test-9"))


async def test_keys_rotate_in_and_out(identity: Identity, jwks: ServedJwks, verifier: TokenVerifier) -> None:
    await verifier.start()
    rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwks.rotate_in(rotated, "test-2")
    await verifier.refresh()  # what the periodic refresh does every JWKS_REFRESH_INTERVAL
    assert (await verifier.verify(identity.token("carol", key=rotated, kid="test-2"))).name == "carol"
    jwks.keys = jwks.keys[1:]  # the first key is withdrawn
    await verifier.refresh()
    with pytest.raises(Unauthorized, match="no RS256 signing key with id 'test-1'"):
        await verifier.verify(identity.token("alice"))
    fetches = jwks.fetches
    # An unknown key id fetches the JWKS again only after the cooldown since the last fetch.
    with pytest.raises(Unauthorized):
        await verifier.verify(identity.token("alice"))
    assert jwks.fetches == fetches


async def test_a_jwks_file_is_read_again(identity: Identity, tmp_path: Path) -> None:
    """A mounted secret the operator rotates: its new keys are taken up without a restart."""
    verifier = verifier_of(str(identity.jwks))
    await verifier.start()
    try:
        assert (await verifier.verify(identity.token("alice"))).name == "alice"
        rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        identity.jwks.write_text(json.dumps({"keys": [public_jwk(rotated, "test-2")]}))
        await verifier.refresh()
        assert (await verifier.verify(identity.token("carol", key=rotated, kid="test-2"))).name == "carol"
        with pytest.raises(Unauthorized):
            await verifier.verify(identity.token("alice"))
        # A file gone missing keeps the keys read before.
        identity.jwks.unlink()
        await verifier.refresh()
        assert verifier.problem is not None
        assert "keeping the keys read before" in verifier.problem
        assert (await verifier.verify(identity.token("carol", key=rotated, kid="test-2"))).name == "carol"
    finally:
        await verifier.stop()


async def test_a_header_naming_an_algorithm_its_key_cannot_serve_is_refused(identity: Identity) -> None:
    """A forged header (ES256 over the RSA key's id) is a 401, never a verifier crash (500)."""
    verifier = verifier_of(str(identity.jwks))
    _, _, rest = identity.token("mallory").partition(".")
    forged_header = jwt.utils.base64url_encode(json.dumps({"alg": "ES256", "kid": "test-1", "typ": "JWT"}).encode())
    with pytest.raises(Unauthorized, match="no ES256 signing key with id 'test-1'"):
        await verifier.verify(forged_header.decode() + "." + rest)


async def test_a_jwks_file_turned_into_something_else_keeps_the_keys(identity: Identity) -> None:
    verifier = verifier_of(str(identity.jwks))
    identity.jwks.write_text("[1, 2]")  # JSON, but no key set
    await verifier.refresh()
    assert verifier.problem is not None
    assert (await verifier.verify(identity.token("alice"))).name == "alice"


def test_the_refetch_cooldown_and_the_longest_retry_wait_are_settings(
    identity: Identity, monkeypatch: pytest.MonkeyPatch
) -> None:
    defaults = verifier_of(str(identity.jwks))
    assert (defaults.refetch_cooldown, defaults.retry_delay, defaults.max_retry_delay) == (30.0, 5.0, 60.0)
    monkeypatch.setenv("REGISTRY_AUTH_JWKS_REFETCH_COOLDOWN", "2")
    monkeypatch.setenv("REGISTRY_AUTH_JWKS_MAX_RETRY_DELAY", "1")
    settings = Settings.from_env()
    shortened = TokenVerifier(
        dataclasses.replace(settings, auth_jwks=str(identity.jwks), auth_jwt_issuer=ISSUER, auth_jwt_audience=AUDIENCE)
    )
    # The first retry waits no longer than the longest wait either.
    assert (shortened.refetch_cooldown, shortened.retry_delay, shortened.max_retry_delay) == (2.0, 1.0, 1.0)
    monkeypatch.setenv("REGISTRY_AUTH_JWKS_MAX_RETRY_DELAY", "0")
    with pytest.raises(ConfigError, match="REGISTRY_AUTH_JWKS_MAX_RETRY_DELAY: must be above zero"):
        Settings.from_env()
