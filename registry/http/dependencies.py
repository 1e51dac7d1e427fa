"""Typed services for the handlers, through Litestar's dependency injection.

``registry.app`` builds one :class:`Services` in the application's lifespan; handlers declare the service they
need by name and type (``directory: DirectoryService``) instead of reaching into untyped application state.
"""

from __future__ import annotations

import dataclasses

from litestar.datastructures import State
from litestar.di import Provide

from registry.config import Settings
from registry.directory.search import SearchService
from registry.directory.service import DirectoryService
from registry.discovery.service import DiscoveryService
from registry.events.feed import ChangeFeed
from registry.events.hub import EventHub
from registry.store.database import Database


@dataclasses.dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    database: Database
    feed: ChangeFeed
    events: EventHub
    directory: DirectoryService
    discovery: DiscoveryService
    search: SearchService
    #: The directory's own Thing Description (served at /.well-known/wot), encoded once.
    directory_td_json: bytes


def services(state: State) -> Services:
    found: Services = state.services
    return found


def provide_directory(state: State) -> DirectoryService:
    return services(state).directory


def provide_discovery(state: State) -> DiscoveryService:
    return services(state).discovery


def provide_search(state: State) -> SearchService:
    return services(state).search


def provide_events(state: State) -> EventHub:
    return services(state).events


def provide_settings(state: State) -> Settings:
    """There before the lifespan starts: handlers that need no database still see them."""
    settings: Settings = state.settings
    return settings


DEPENDENCIES = {
    "directory": Provide(provide_directory, sync_to_thread=False),
    "discovery": Provide(provide_discovery, sync_to_thread=False),
    "search": Provide(provide_search, sync_to_thread=False),
    "events": Provide(provide_events, sync_to_thread=False),
    "settings": Provide(provide_settings, sync_to_thread=False),
}

__all__ = ["DEPENDENCIES", "Services", "services"]
