"""One TLS context for the HTTP clients of a test process.

httpx makes a new ``ssl.SSLContext`` for each client, loading certifi's bundle of CA certificates: far more CPU than
a request over loopback (plain HTTP, where the context is never used) takes. The tests make thousands
of clients (``httpx.get`` makes one per call, and so does each poll of a wait for a server), so a test process makes
the context of the default settings once and gives it to every client that asks for those settings. Clients with
settings of their own (``verify=False``, a context or a certificate of their own) get theirs as before.
"""

from __future__ import annotations

import functools
import ssl
from typing import Any

from httpx._transports import default as transports


def share_the_default_context() -> None:
    """Make httpx's transports of this process share one context for the default settings (idempotent)."""
    make = transports.create_ssl_context
    if getattr(make, "shares_the_default", False):
        return

    @functools.cache
    def default() -> ssl.SSLContext:
        return make()

    def create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
        if verify is True and cert is None and trust_env:
            return default()
        return make(verify=verify, cert=cert, trust_env=trust_env)

    create_ssl_context.shares_the_default = True  # type: ignore[attr-defined]
    transports.create_ssl_context = create_ssl_context
