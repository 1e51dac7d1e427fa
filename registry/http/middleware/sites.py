"""Which sites may talk to the directory: the ``Host`` names it answers to and the origins whose pages may write.

A page the operator opens in a browser can send requests to the directory: a cross-site ``POST`` (a form, or
``fetch`` with ``mode: "no-cors"``), or, through DNS rebinding, same-origin requests to a name the attacker
controls that resolves to the directory's address. Two rules stop both, checked at the input boundary before
anything else (registry/http/middleware/boundary.py):

- the ``Host`` header must name this directory (``REGISTRY_ALLOWED_HOSTS``; by default the loopback names, the
  host the server listens on and the host of ``REGISTRY_PUBLIC_URL``), as Django's ``ALLOWED_HOSTS`` and Jupyter's
  rebinding protection do; a rebinding page always sends its own name;
- an unsafe request (``POST``, ``PUT``, ``PATCH``, ``DELETE``) that carries an ``Origin`` must come from this
  directory's own origin (the request's ``Host``, or the public URL) or from one listed in
  ``REGISTRY_CORS_ORIGINS``. Requests without ``Origin`` (the SDK, the CLI, curl) are not browsers' cross-site
  requests and pass.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from urllib.parse import urlsplit

from registry.config import Settings

#: Methods that change something: a cross-site page must not be able to send them.
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Names of this machine, always allowed (``REGISTRY_ALLOWED_HOSTS`` replaces the list).
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: Addresses that mean "every interface": never a name a client uses.
_WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def host_name(value: str) -> str:
    """The name of a ``Host`` header value or an allow-list entry: lower case, without port, brackets or a final
    dot (``[::1]:8080`` → ``::1``, ``Example.COM.:80`` → ``example.com``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    if value.count(":") == 1:  # name:port (a bare IPv6 address has several colons)
        value = value.partition(":")[0]
    return value.rstrip(".")


def _origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of ``url`` (default ports left out), lower case; None if it has no host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    shown = "" if port is None or port == _DEFAULT_PORTS.get(parts.scheme.lower()) else f":{port}"
    return f"{parts.scheme.lower()}://{host.lower()}{shown}"


@dataclasses.dataclass(frozen=True, slots=True)
class SitePolicy:
    """The allowed ``Host`` names and cross-site origins of one directory."""

    #: Exact host names (see :func:`host_name`).
    hosts: frozenset[str] = frozenset(LOOPBACK_HOSTS)
    #: Domains whose subdomains are allowed too (entries written ``.example.com``).
    domains: tuple[str, ...] = ()
    any_host: bool = False
    #: Origins (``scheme://host[:port]``) whose pages may send unsafe requests.
    origins: frozenset[str] = frozenset()
    any_origin: bool = False
    #: The origin of ``REGISTRY_PUBLIC_URL`` (the dashboard's, behind a proxy).
    public_origin: str | None = None

    @classmethod
    def of(cls, settings: Settings) -> SitePolicy:
        entries = settings.allowed_hosts or _default_hosts(settings)
        names = {host_name(entry) for entry in entries if entry.strip() not in {"*"}}
        return cls(
            hosts=frozenset(name for name in names if not name.startswith(".")),
            domains=tuple(name for name in names if name.startswith(".")),
            any_host=_lists_any(entries),
            origins=frozenset(_origins(settings.cors_origins)),
            any_origin=_lists_any(settings.cors_origins),
            public_origin=_origin_of(settings.base_url),
        )

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request with this ``Host`` header (None: without one, which no browser sends) is served."""
        if host is None or self.any_host:
            return True
        return _host_allowed(self, host)

    def origin_allowed(self, origin: str, host: str | None) -> bool:
        """Whether a page of ``origin`` may send an unsafe request that reached this directory as ``host``."""
        if self.any_origin:
            return True
        normalised = _origin_of(origin)
        if normalised is None:  # "null" (sandboxed frames, file: pages) or garbage
            return False
        if normalised in self.origins or normalised == self.public_origin:
            return True
        # Same origin: the page was served by this directory under the name the request carries.
        return host is not None and urlsplit(normalised).netloc == _netloc_of(host, urlsplit(normalised).scheme)


@functools.lru_cache(maxsize=256)
def _host_allowed(sites: SitePolicy, host: str) -> bool:
    """The decision for one ``Host`` value, remembered: clients send the same few on every request."""
    name = host_name(host)
    return name in sites.hosts or any(name == domain[1:] or name.endswith(domain) for domain in sites.domains)


def _netloc_of(host: str, scheme: str) -> str:
    """``host`` as an origin's host[:port] for ``scheme`` (its default port left out)."""
    normalised = _origin_of(f"{scheme}://{host.strip()}")
    return "" if normalised is None else normalised.partition("://")[2]


def _lists_any(entries: Iterable[str]) -> bool:
    """Whether an allow-list holds ``*`` (everything allowed)."""
    return "*" in (entry.strip() for entry in entries)


def _origins(entries: Iterable[str]) -> set[str]:
    """The origins of an allow-list's entries, those that name one."""
    return {origin for entry in entries if (origin := _origin_of(entry)) is not None}


def _default_hosts(settings: Settings) -> tuple[str, ...]:
    named = (settings.host, urlsplit(settings.base_url).hostname or "")
    return (*LOOPBACK_HOSTS, *(name for name in named if host_name(name) not in _WILDCARD_ADDRESSES))


__all__ = ["LOOPBACK_HOSTS", "UNSAFE_METHODS", "SitePolicy", "host_name"]
