"""Typed services for the handlers, through Litestar's dependency injection.

``registry.app`` builds one :class:`Services` in the application's lifespan; handlers declare the service they
need by name and type (``directory: DirectoryService``) instead of reaching into untyped application state.
"""

from __future__ import annotations

import dataclasses

from litestar.di import Provide

from registry.auth.authenticator import Authenticator
from registry.auth.keys import KeyAdministration
from registry.auth.quotas import RateLimits
from registry.conventions.service import ConventionService
from registry.directory.search import SearchService
from registry.directory.service import DirectoryService
from registry.discovery.oversight import OversightService
from registry.discovery.service import DiscoveryService
from registry.events.hub import EventHub
from registry.ops.health import Readiness
from registry.ops.metrics import Gauges


@dataclasses.dataclass(frozen=True, slots=True)
class DirectoryTd:
    """The directory's own Thing Description (served at /.well-known/wot), encoded once."""

    json: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class Access:
    """Who may do what (authentication mode, keys, tokens) and how often (rate limits, stream caps)."""

    authenticator: Authenticator
    limits: RateLimits
    #: The keys an admin manages over HTTP (``/api/v1/keys``).
    keys: KeyAdministration
    #: The bearer token that may read ``/metrics`` besides admins (REGISTRY_METRICS_TOKEN); empty = admins only.
    metrics_token: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Services:
    """What handlers and the cached-read middleware use, each handed out by a provider of ``dependencies``."""

    events: EventHub
    directory: DirectoryService
    discovery: DiscoveryService
    search: SearchService
    conventions: ConventionService
    directory_td: DirectoryTd
    access: Access
    readiness: Readiness
    gauges: Gauges
    oversight: OversightService


class ServiceHolder:
    """Where the lifespan puts the services, for the providers to hand out.

    The providers take no parameters: one that asks for ``state`` costs Litestar a signature-model parse on every
    request, a measurable share of the instructions of a GET.
    """

    def __init__(self) -> None:
        self._services: Services | None = None

    def fill(self, services: Services) -> None:
        self._services = services

    @property
    def services(self) -> Services:
        if self._services is None:
            raise RuntimeError("the application's services are used before its lifespan started")
        return self._services


def dependencies(holder: ServiceHolder) -> dict[str, Provide]:
    """The services handlers may declare, by name: ``directory: NamedDependency[DirectoryService]``, … A handler
    declares one where it can: Litestar resolves two or more in an anyio task group per request (a visible
    share of a PUT's server samples); the settings come with the directory service (``directory.settings``)."""

    def provide_directory() -> DirectoryService:
        return holder.services.directory

    def provide_discovery() -> DiscoveryService:
        return holder.services.discovery

    def provide_search() -> SearchService:
        return holder.services.search

    def provide_conventions() -> ConventionService:
        return holder.services.conventions

    def provide_events() -> EventHub:
        return holder.services.events

    def provide_directory_td() -> DirectoryTd:
        return holder.services.directory_td

    def provide_readiness() -> Readiness:
        return holder.services.readiness

    def provide_oversight() -> OversightService:
        return holder.services.oversight

    def provide_gauges() -> Gauges:
        return holder.services.gauges

    def provide_access() -> Access:
        return holder.services.access

    return {
        "directory": Provide(provide_directory, sync_to_thread=False),
        "discovery": Provide(provide_discovery, sync_to_thread=False),
        "search": Provide(provide_search, sync_to_thread=False),
        "conventions": Provide(provide_conventions, sync_to_thread=False),
        "events": Provide(provide_events, sync_to_thread=False),
        "directory_td": Provide(provide_directory_td, sync_to_thread=False),
        "readiness": Provide(provide_readiness, sync_to_thread=False),
        "gauges": Provide(provide_gauges, sync_to_thread=False),
        "oversight": Provide(provide_oversight, sync_to_thread=False),
        "access": Provide(provide_access, sync_to_thread=False),
    }


__all__ = ["Access", "DirectoryTd", "ServiceHolder", "Services", "dependencies"]
