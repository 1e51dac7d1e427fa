"""Typed services for the handlers, through Litestar's dependency injection.

``registry.app`` builds one :class:`Services` in the application's lifespan; handlers declare the service they
need by name and type (``directory: DirectoryService``) instead of reaching into untyped application state.
"""

from __future__ import annotations

import dataclasses

from litestar.di import Provide

from registry.config import Settings
from registry.directory.search import SearchService
from registry.directory.service import DirectoryService
from registry.discovery.service import DiscoveryService
from registry.events.feed import ChangeFeed
from registry.events.hub import EventHub
from registry.store.database import Database


@dataclasses.dataclass(frozen=True, slots=True)
class DirectoryTd:
    """The directory's own Thing Description (served at /.well-known/wot), encoded once."""

    json: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    database: Database
    feed: ChangeFeed
    events: EventHub
    directory: DirectoryService
    discovery: DiscoveryService
    search: SearchService
    directory_td: DirectoryTd


class ServiceHolder:
    """Where the lifespan puts the services, for the providers to hand out.

    The providers take no parameters: one that asks for ``state`` costs Litestar a signature-model parse on every
    request (measured: about 8 % of the instructions of a GET).
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


def dependencies(holder: ServiceHolder, settings: Settings) -> dict[str, Provide]:
    """The services handlers may declare, by name: ``directory: NamedDependency[DirectoryService]``, …"""

    def provide_directory() -> DirectoryService:
        return holder.services.directory

    def provide_discovery() -> DiscoveryService:
        return holder.services.discovery

    def provide_search() -> SearchService:
        return holder.services.search

    def provide_events() -> EventHub:
        return holder.services.events

    def provide_directory_td() -> DirectoryTd:
        return holder.services.directory_td

    def provide_settings() -> Settings:
        return settings

    return {
        "directory": Provide(provide_directory, sync_to_thread=False),
        "discovery": Provide(provide_discovery, sync_to_thread=False),
        "search": Provide(provide_search, sync_to_thread=False),
        "events": Provide(provide_events, sync_to_thread=False),
        "directory_td": Provide(provide_directory_td, sync_to_thread=False),
        "settings": Provide(provide_settings, sync_to_thread=False),
    }


__all__ = ["DirectoryTd", "ServiceHolder", "Services", "dependencies"]
