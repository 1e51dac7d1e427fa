"""Settings of the group "Server": where it listens, the hosts and origins it answers, its processes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from registry.config.fields import SERVER, setting
from registry.config.parsers import non_negative, parse_list


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    """The fields of :class:`registry.config.Settings` in the group ``SERVER``; never made on its own."""

    # No slots of its own: Settings, which gathers the groups, has a slot per field (and no __dict__).
    __slots__ = ()

    host: str = setting(SERVER, "127.0.0.1", "Interface to listen on (`--host`).")
    port: int = setting(SERVER, 8080, "TCP port (`--port`).")
    public_url: str = setting(
        SERVER,
        "",
        "Base URL clients see (behind a proxy); used in the directory TD (`--public-url`).",
        shown="`http://{host}:{port}`",
    )
    allowed_hosts: tuple[str, ...] = setting(
        SERVER,
        (),
        "`Host` names the directory answers to, comma-separated (port ignored; `.example.com` = that domain and its "
        "subdomains; `*` = any); others get 400 (DNS rebinding, docs/security.md).",
        shown="loopback names, the listening address, the public URL's host",
    )
    cors_origins: tuple[str, ...] = setting(
        SERVER,
        (),
        "Origins (`https://app.example.com`) whose pages may write and read across sites (CORS); an unsafe request "
        "from any other page's origin gets 403.",
    )
    workers: int = setting(
        SERVER,
        1,
        "Server processes (`--workers`), each with its own connections, database budget and response cache; they "
        "share one SPARQL worker and its on-disk index (docs/scaling.md).",
    )


#: How each field's ``REGISTRY_*`` variable is read.
PARSERS: dict[str, Callable[[str], Any]] = {
    "host": str,
    "port": non_negative(int),
    "public_url": str,
    "allowed_hosts": parse_list,
    "cors_origins": parse_list,
    "workers": non_negative(int),
}
