"""Settings of the group "Connections and requests": timeouts, trusted proxies, sizes of requests."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from registry.config.fields import CONNECTIONS, setting
from registry.config.parsers import non_negative, trusted_proxies


@dataclasses.dataclass(frozen=True)
class ConnectionSettings:
    """The fields of :class:`registry.config.Settings` in the group ``CONNECTIONS``; never made on its own."""

    # No slots of its own: Settings, which gathers the groups, has a slot per field (and no __dict__).
    __slots__ = ()

    header_timeout: float = setting(
        CONNECTIONS,
        10.0,
        "Seconds a client has to send the request line and headers; 408 and closed after (`--header-timeout`).",
    )
    body_timeout: float = setting(
        CONNECTIONS,
        30.0,
        "Seconds a client has to send a request's whole body once its headers are in; 408 and closed after "
        "(`--body-timeout`).",
    )
    idle_timeout: float = setting(
        CONNECTIONS,
        5.0,
        "Seconds an idle keep-alive connection is kept open (`--idle-timeout`).",
    )
    trusted_proxies: tuple[str, ...] = setting(
        CONNECTIONS,
        (),
        "Reverse proxies (addresses or CIDR blocks, comma-separated) whose `X-Forwarded-For`, `X-Forwarded-Proto` and "
        '`Forwarded` headers name the client; from any other peer they are ignored (see "Connections and reverse '
        'proxies").',
    )
    max_connections: int = setting(
        CONNECTIONS,
        2048,
        "Open connections per process; beyond, a connection is answered 503 and closed (`--max-connections`).",
    )
    max_connections_per_client: int = setting(
        CONNECTIONS,
        256,
        "Open connections from one client address (an IPv6 client by its /64), per process "
        "(`--max-connections-per-client`); a trusted proxy's count only towards the total.",
    )
    max_header_bytes: int = setting(
        CONNECTIONS,
        16384,
        "Largest request headers besides the request line, in bytes; 431 above (`--max-header-bytes`).",
    )
    max_url_bytes: int = setting(
        CONNECTIONS,
        65536,
        "Longest URL (path and query string), in bytes; longer ones get 414 (send long SPARQL queries by POST).",
    )
    max_body_bytes: int = setting(CONNECTIONS, 4 * 1024 * 1024, "Largest request body, in bytes; larger ones get 413.")
    max_json_depth: int = setting(
        CONNECTIONS,
        128,
        "Deepest nesting of a JSON body (400 above); JSONPath search is built to traverse documents this deep.",
    )
    max_json_nodes: int = setting(
        CONNECTIONS,
        500_000,
        "Most values (objects, arrays, scalars) in a JSON body (400 above).",
    )
    max_notice_header_count: int = setting(
        CONNECTIONS,
        20,
        "Notices sent in the `Registry-Notices` header at most; all of them go in the body then.",
    )
    max_notice_header_bytes: int = setting(CONNECTIONS, 4096, "Longest `Registry-Notices` header value, in bytes.")


#: How each field's ``REGISTRY_*`` variable is read.
PARSERS: dict[str, Callable[[str], Any]] = {
    "header_timeout": non_negative(float),
    "body_timeout": non_negative(float),
    "idle_timeout": non_negative(float),
    "trusted_proxies": trusted_proxies,
    "max_connections": non_negative(int),
    "max_connections_per_client": non_negative(int),
    "max_header_bytes": non_negative(int),
    "max_url_bytes": non_negative(int),
    "max_body_bytes": non_negative(int),
    "max_json_depth": non_negative(int),
    "max_json_nodes": non_negative(int),
    "max_notice_header_count": non_negative(int),
    "max_notice_header_bytes": non_negative(int),
}
