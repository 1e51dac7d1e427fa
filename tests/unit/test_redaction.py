"""URLs in messages lose their credentials and query strings, nothing else (registry/redaction.py)."""

from __future__ import annotations

from registry.redaction import redact_urls


def test_credentials_and_queries_are_cut_from_every_url_in_a_message() -> None:
    message = (
        "cannot read the JWKS from https://user:pa%40ss@idp.example:8443/realms/x/jwks?api_key=k&x=1 (timed out); "
        "also postgresql://registry:secret@db:5432/registry?sslmode=require"
    )
    assert redact_urls(message) == (
        "cannot read the JWKS from https://idp.example:8443/realms/x/jwks?… (timed out); "
        "also postgresql://db:5432/registry?…"
    )


def test_text_without_urls_or_secrets_is_unchanged() -> None:
    for text in ("3 signing key(s) from /etc/registry/jwks.json, read 5 s ago", "http://idp.example/jwks", "a@b c"):
        assert redact_urls(text) == text
