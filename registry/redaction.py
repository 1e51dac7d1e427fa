"""Secrets out of messages: URLs in what the directory says or logs keep their scheme, host, port and path, never
their user information or query string (``https://user:password@idp/jwks?api_key=…`` → ``https://idp/jwks?…``)."""

from __future__ import annotations

import re

#: A URL: scheme, optional user information, authority and path, optional query, optional fragment.
_URL = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#@\s]*@)?(?P<rest>[^?#\s]*)(?P<query>\?[^#\s]*)?"
)


def _redacted(match: re.Match[str]) -> str:
    query = "?…" if match.group("query") else ""
    return f"{match.group('scheme')}{match.group('rest')}{query}"


def redact_urls(text: str) -> str:
    """``text`` with the credentials and query strings of the URLs in it left out."""
    return _URL.sub(_redacted, text)


__all__ = ["redact_urls"]
