"""``AsyncRegistryClient`` (async first) and ``RegistryClient`` (the same API, blocking), on httpx."""

from __future__ import annotations

import asyncio
import builtins
import os
import time
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import httpx
import httpx_sse

from registry.client import calls
from registry.client.errors import DirectoryUnreachable, problem_from
from registry.client.models import (
    BatchResult,
    CompatibilityResult,
    Event,
    Facets,
    ImportedAgent,
    ImportedTool,
    Lease,
    Requirement,
    ResolveResult,
    SearchResult,
    SparqlResults,
    ThingSummary,
    VersionDetail,
    VersionList,
    WriteResult,
)

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 10.0


def default_url() -> str:
    return os.environ.get("REGISTRY_URL", DEFAULT_URL)


class _ClientOptions:
    """What both clients share: where the directory is and how to talk to it."""

    def __init__(
        self,
        base_url: str | None,
        *,
        timeout: float,
        events_idle_timeout: float,
        headers: Mapping[str, str] | None,
        token: str | None,
    ) -> None:
        self.base_url = (base_url or default_url()).rstrip("/")
        self.timeout = timeout
        #: An event stream that sends nothing (not even a keep-alive) for this long is considered broken.
        self.stream_timeout = httpx.Timeout(timeout, read=events_idle_timeout)
        self.headers = {"User-Agent": "lmos-registry-client", **(headers or {})}
        # An API key or access token: given, else REGISTRY_TOKEN (docs/security.md).
        token = token or os.environ.get("REGISTRY_TOKEN")
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    @staticmethod
    def filters(kind: str | None, vendor: str | None, capability: str | None, q: str | None) -> dict[str, str | None]:
        return {"kind": kind, "vendor": vendor, "capability": capability, "q": q}


class AsyncRegistryClient(_ClientOptions):
    """Talks to one directory. Use as ``async with AsyncRegistryClient(url) as client: ...``."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        events_idle_timeout: float = 60.0,
        headers: Mapping[str, str] | None = None,
        token: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(
            base_url, timeout=timeout, events_idle_timeout=events_idle_timeout, headers=headers, token=token
        )
        self.http = httpx.AsyncClient(
            base_url=self.base_url, timeout=timeout, headers=self.headers, transport=transport
        )

    async def __aenter__(self) -> AsyncRegistryClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _run(self, call: calls.Call[T]) -> T:
        try:
            response = await self.http.send(call.request(self.http))
        except httpx.TransportError as error:
            raise DirectoryUnreachable(f"{self.base_url} is unreachable: {error!r}") from error
        return call.parse(response)

    async def register(
        self, document: Mapping[str, Any], *, ttl: float | None = None, create_only: bool = False
    ) -> WriteResult:
        """``create_only``: refuse to replace an existing description (PreconditionFailedError)."""
        return await self._run(calls.register(document, ttl, create_only=create_only))

    async def register_batch(self, documents: Sequence[Mapping[str, Any]], *, ttl: float | None = None) -> BatchResult:
        """Create or replace up to 1,000 descriptions (each with its id) in one request and one transaction."""
        return await self._run(calls.register_batch(documents, ttl))

    async def replace(
        self, document: Mapping[str, Any], *, ttl: float | None = None, if_match: str | None = None
    ) -> WriteResult:
        return await self._run(calls.replace(document, ttl=ttl, if_match=if_match))

    async def patch(self, thing_id: str, merge_patch: Mapping[str, Any], *, if_match: str | None = None) -> WriteResult:
        return await self._run(calls.patch(thing_id, merge_patch, if_match=if_match))

    async def delete(self, thing_id: str, *, if_match: str | None = None) -> None:
        await self._run(calls.delete(thing_id, if_match=if_match))

    async def get(self, thing_id: str) -> dict[str, Any]:
        return await self._run(calls.get(thing_id))

    async def list(self, *, offset: int | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        return await self._run(calls.list_things(offset=offset, limit=limit))

    async def renew_lease(self, thing_id: str) -> Lease:
        """Keep a registration with a ttl alive: expires = now + its ttl."""
        return await self._run(calls.renew_lease(thing_id))

    async def search(
        self,
        *,
        kind: str | None = None,
        vendor: str | None = None,
        capability: str | None = None,
        capability_version: str | None = None,
        type_: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        facets: bool = False,
        vendor_match: str | None = None,
        convention: str | None = None,
    ) -> SearchResult:
        """One page of matches; pass ``next_cursor`` as ``cursor`` for the next. ``type_`` is an @type;
        ``vendor_match``: words (default), exact or fuzzy."""
        return await self._run(
            calls.search(
                kind=kind,
                vendor=vendor,
                capability=capability,
                capability_version=capability_version,
                type_=type_,
                q=q,
                sort=sort,
                limit=limit,
                cursor=cursor,
                facets=facets,
                vendor_match=vendor_match,
                convention=convention,
            )
        )

    async def facets(
        self,
        *,
        kind: str | None = None,
        vendor: str | None = None,
        capability: str | None = None,
        capability_version: str | None = None,
        type_: str | None = None,
        q: str | None = None,
        convention: str | None = None,
    ) -> Facets:
        return await self._run(
            calls.facets(
                kind=kind,
                vendor=vendor,
                capability=capability,
                capability_version=capability_version,
                type_=type_,
                q=q,
                convention=convention,
            )
        )

    async def summary(self, thing_id: str) -> ThingSummary:
        return await self._run(calls.summary(thing_id))

    async def versions(self, thing_id: str, *, satisfies: str | None = None) -> VersionList:
        return await self._run(calls.versions(thing_id, satisfies))

    async def version(self, thing_id: str, version: str) -> VersionDetail:
        return await self._run(calls.version(thing_id, version))

    async def sparql(self, query: str, *, post: bool = False) -> SparqlResults:
        return await self._run(calls.sparql(query, post=post))

    async def sparql_graph(self, query: str, *, media_type: str = "text/turtle", post: bool = False) -> str:
        return await self._run(calls.sparql_graph(query, media_type=media_type, post=post))

    async def jsonpath(self, query: str) -> builtins.list[Any]:
        return await self._run(calls.jsonpath(query))

    async def resolve(self, requirements: Sequence[Requirement | str | Mapping[str, Any]]) -> ResolveResult:
        return await self._run(calls.resolve(requirements))

    async def compatibility(self, thing_id: str, from_version: str, to_version: str) -> CompatibilityResult:
        return await self._run(calls.compatibility(thing_id, from_version, to_version))

    async def compare(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> CompatibilityResult:
        return await self._run(calls.compare(old, new))

    async def import_tool(
        self,
        definition: Any,
        tool_format: str,
        *,
        thing_id: str | None = None,
        vendor: str | None = None,
        version: str | None = None,
        href: str | None = None,
    ) -> ImportedTool:
        """Store an LLM tool definition as an lmos:Tool (without ``thing_id`` re-importing replaces it)."""
        return await self._run(
            calls.import_tool(definition, tool_format, thing_id=thing_id, vendor=vendor, version=version, href=href)
        )

    async def import_card(self, card: Any, *, thing_id: str | None = None) -> ImportedAgent:
        """Store an A2A Agent Card as an lmos:Agent (without ``thing_id`` re-importing the card replaces it)."""
        return await self._run(calls.import_card(card, thing_id=thing_id))

    async def export(self, thing_id: str, tool_format: str) -> calls.Exported:
        return await self._run(calls.export(thing_id, tool_format))

    async def events(
        self,
        event_type: str | None = None,
        *,
        diff: bool = False,
        kind: str | None = None,
        vendor: str | None = None,
        capability: str | None = None,
        q: str | None = None,
        last_event_id: int | None = None,
        reconnect: bool = True,
        retry_delay: float = 1.0,
    ) -> AsyncGenerator[Event, None]:
        """Change events as they happen; after a broken stream it reconnects and resumes with Last-Event-ID."""
        subscription = calls.Subscription(
            event_type, diff=diff, filters=self.filters(kind, vendor, capability, q), last_event_id=last_event_id
        )
        while True:
            path, params, headers = subscription.request()
            try:
                async with httpx_sse.aconnect_sse(
                    self.http, "GET", path, params=params, headers=headers, timeout=self.stream_timeout
                ) as source:
                    if source.response.status_code >= 400:
                        await source.response.aread()
                        raise problem_from(source.response)
                    async for message in source.aiter_sse():
                        event = subscription.receive(message)
                        if event is not None:
                            yield event
            except httpx.TransportError as error:
                if not reconnect:
                    raise DirectoryUnreachable(f"event stream from {self.base_url} broke: {error!r}") from error
            else:
                if not reconnect:
                    return
            await asyncio.sleep(retry_delay)


class RegistryClient(_ClientOptions):
    """The blocking twin of ``AsyncRegistryClient``, for scripts and the CLI."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        events_idle_timeout: float = 60.0,
        headers: Mapping[str, str] | None = None,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(
            base_url, timeout=timeout, events_idle_timeout=events_idle_timeout, headers=headers, token=token
        )
        self.http = httpx.Client(base_url=self.base_url, timeout=timeout, headers=self.headers, transport=transport)

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _run(self, call: calls.Call[T]) -> T:
        try:
            response = self.http.send(call.request(self.http))
        except httpx.TransportError as error:
            raise DirectoryUnreachable(f"{self.base_url} is unreachable: {error!r}") from error
        return call.parse(response)

    def register(
        self, document: Mapping[str, Any], *, ttl: float | None = None, create_only: bool = False
    ) -> WriteResult:
        """``create_only``: refuse to replace an existing description (PreconditionFailedError)."""
        return self._run(calls.register(document, ttl, create_only=create_only))

    def register_batch(self, documents: Sequence[Mapping[str, Any]], *, ttl: float | None = None) -> BatchResult:
        """Create or replace up to 1,000 descriptions (each with its id) in one request and one transaction."""
        return self._run(calls.register_batch(documents, ttl))

    def replace(
        self, document: Mapping[str, Any], *, ttl: float | None = None, if_match: str | None = None
    ) -> WriteResult:
        return self._run(calls.replace(document, ttl=ttl, if_match=if_match))

    def patch(self, thing_id: str, merge_patch: Mapping[str, Any], *, if_match: str | None = None) -> WriteResult:
        return self._run(calls.patch(thing_id, merge_patch, if_match=if_match))

    def delete(self, thing_id: str, *, if_match: str | None = None) -> None:
        self._run(calls.delete(thing_id, if_match=if_match))

    def get(self, thing_id: str) -> dict[str, Any]:
        return self._run(calls.get(thing_id))

    def list(self, *, offset: int | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        return self._run(calls.list_things(offset=offset, limit=limit))

    def renew_lease(self, thing_id: str) -> Lease:
        """Keep a registration with a ttl alive: expires = now + its ttl."""
        return self._run(calls.renew_lease(thing_id))

    def search(
        self,
        *,
        kind: str | None = None,
        vendor: str | None = None,
        capability: str | None = None,
        capability_version: str | None = None,
        type_: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        facets: bool = False,
        vendor_match: str | None = None,
        convention: str | None = None,
    ) -> SearchResult:
        """One page of matches; pass ``next_cursor`` as ``cursor`` for the next. ``type_`` is an @type;
        ``vendor_match``: words (default), exact or fuzzy."""
        return self._run(
            calls.search(
                kind=kind,
                vendor=vendor,
                capability=capability,
                capability_version=capability_version,
                type_=type_,
                q=q,
                sort=sort,
                limit=limit,
                cursor=cursor,
                facets=facets,
                vendor_match=vendor_match,
                convention=convention,
            )
        )

    def facets(
        self,
        *,
        kind: str | None = None,
        vendor: str | None = None,
        capability: str | None = None,
        capability_version: str | None = None,
        type_: str | None = None,
        q: str | None = None,
        convention: str | None = None,
    ) -> Facets:
        return self._run(
            calls.facets(
                kind=kind,
                vendor=vendor,
                capability=capability,
                capability_version=capability_version,
                type_=type_,
                q=q,
                convention=convention,
            )
        )

    def summary(self, thing_id: str) -> ThingSummary:
        return self._run(calls.summary(thing_id))

    def versions(self, thing_id: str, *, satisfies: str | None = None) -> VersionList:
        return self._run(calls.versions(thing_id, satisfies))

    def version(self, thing_id: str, version: str) -> VersionDetail:
        return self._run(calls.version(thing_id, version))

    def sparql(self, query: str, *, post: bool = False) -> SparqlResults:
        return self._run(calls.sparql(query, post=post))

    def sparql_graph(self, query: str, *, media_type: str = "text/turtle", post: bool = False) -> str:
        return self._run(calls.sparql_graph(query, media_type=media_type, post=post))

    def jsonpath(self, query: str) -> builtins.list[Any]:
        return self._run(calls.jsonpath(query))

    def resolve(self, requirements: Sequence[Requirement | str | Mapping[str, Any]]) -> ResolveResult:
        return self._run(calls.resolve(requirements))

    def compatibility(self, thing_id: str, from_version: str, to_version: str) -> CompatibilityResult:
        return self._run(calls.compatibility(thing_id, from_version, to_version))

    def compare(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> CompatibilityResult:
        return self._run(calls.compare(old, new))

    def import_tool(
        self,
        definition: Any,
        tool_format: str,
        *,
        thing_id: str | None = None,
        vendor: str | None = None,
        version: str | None = None,
        href: str | None = None,
    ) -> ImportedTool:
        """Store an LLM tool definition as an lmos:Tool (without ``thing_id`` re-importing replaces it)."""
        return self._run(
            calls.import_tool(definition, tool_format, thing_id=thing_id, vendor=vendor, version=version, href=href)
        )

    def import_card(self, card: Any, *, thing_id: str | None = None) -> ImportedAgent:
        """Store an A2A Agent Card as an lmos:Agent (without ``thing_id`` re-importing the card replaces it)."""
        return self._run(calls.import_card(card, thing_id=thing_id))

    def export(self, thing_id: str, tool_format: str) -> calls.Exported:
        return self._run(calls.export(thing_id, tool_format))

    def events(
        self,
        event_type: str | None = None,
        *,
        diff: bool = False,
        kind: str | None = None,
        vendor: str | None = None,
        capability: str | None = None,
        q: str | None = None,
        last_event_id: int | None = None,
        reconnect: bool = True,
        retry_delay: float = 1.0,
    ) -> Iterator[Event]:
        subscription = calls.Subscription(
            event_type, diff=diff, filters=self.filters(kind, vendor, capability, q), last_event_id=last_event_id
        )
        while True:
            path, params, headers = subscription.request()
            try:
                with httpx_sse.connect_sse(
                    self.http, "GET", path, params=params, headers=headers, timeout=self.stream_timeout
                ) as source:
                    if source.response.status_code >= 400:
                        source.response.read()
                        raise problem_from(source.response)
                    for message in source.iter_sse():
                        event = subscription.receive(message)
                        if event is not None:
                            yield event
            except httpx.TransportError as error:
                if not reconnect:
                    raise DirectoryUnreachable(f"event stream from {self.base_url} broke: {error!r}") from error
            else:
                if not reconnect:
                    return
            time.sleep(retry_delay)


__all__ = ["DEFAULT_URL", "AsyncRegistryClient", "RegistryClient", "default_url"]
