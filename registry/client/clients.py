"""``AsyncRegistryClient`` (async first) and ``RegistryClient`` (the same API, blocking), on httpx.

Every method is described once, by its function in registry/client/calls/ (its parameters, its docstring, the
request and how to read the answer); ``Operation``, ``Listing``, ``Watch`` and ``Events`` make that function a
method of both clients, and each client adds only its I/O.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Iterator, Mapping
from typing import Any, ClassVar, Generic, ParamSpec, Self, TypeVar, overload

import httpx

from registry.client import calls
from registry.client.errors import DirectoryUnreachable
from registry.client.models import Event
from registry.client.streams import AsyncEventStream, EventStream

P = ParamSpec("P")
T = TypeVar("T")
Item = TypeVar("Item")

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 10.0


def default_url() -> str:
    return os.environ.get("REGISTRY_URL", DEFAULT_URL)


class _Method:
    """A client method made of a function of calls/; the client's binder (named by ``binder``) adds the I/O.
    Bound once per client and kept in its ``__dict__``."""

    binder: ClassVar[str]

    def __init__(self, build: Callable[..., Any]) -> None:
        self.build = build
        self.name = build.__name__
        self.__doc__ = build.__doc__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{type(self).__name__.lower()} {self.name}{self.signature}>"

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        """The function's parameters (what the method returns is the client's: awaited, iterated, ...)."""
        return inspect.signature(self.build).replace(return_annotation=inspect.Signature.empty)

    def bind(self, client: _ClientOptions | None) -> Any:
        if client is None:
            return self
        method = getattr(client, self.binder)(self.build)
        method.__name__ = method.__qualname__ = self.name
        method.__doc__ = self.__doc__
        method.__signature__ = self.signature
        client.__dict__[self.name] = method
        return method


class Operation(_Method, Generic[P, T]):
    """One request and its typed answer: awaited by the async client, returned by the blocking one."""

    binder = "_operation"

    def __init__(self, build: Callable[P, calls.Call[T]]) -> None:
        super().__init__(build)

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, client: AsyncRegistryClient, owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...
    @overload
    def __get__(self, client: RegistryClient, owner: type[Any]) -> Callable[P, T]: ...
    def __get__(self, client: _ClientOptions | None, owner: type[Any]) -> Any:
        return self.bind(client)


class Listing(_Method, Generic[P, Item]):
    """Every item of a paged listing, fetching the next page as the iteration reaches it."""

    binder = "_listing"

    def __init__(self, build: Callable[P, calls.Call[calls.Page[Item]]]) -> None:
        super().__init__(build)

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, client: AsyncRegistryClient, owner: type[Any]) -> Callable[P, AsyncIterator[Item]]: ...
    @overload
    def __get__(self, client: RegistryClient, owner: type[Any]) -> Callable[P, Iterator[Item]]: ...
    def __get__(self, client: _ClientOptions | None, owner: type[Any]) -> Any:
        return self.bind(client)


class Watch(_Method, Generic[P]):
    """An event stream to enter (``async with`` / ``with``): subscribed once entered."""

    binder = "_watch"

    def __init__(self, build: Callable[P, calls.Subscription]) -> None:
        super().__init__(build)

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, client: AsyncRegistryClient, owner: type[Any]) -> Callable[P, AsyncEventStream]: ...
    @overload
    def __get__(self, client: RegistryClient, owner: type[Any]) -> Callable[P, EventStream]: ...
    def __get__(self, client: _ClientOptions | None, owner: type[Any]) -> Any:
        return self.bind(client)


class Events(_Method, Generic[P]):
    """The events of a ``watch`` as a generator (subscribed when first read)."""

    binder = "_events"

    def __init__(self, build: Callable[P, calls.Subscription]) -> None:
        super().__init__(build)

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, client: AsyncRegistryClient, owner: type[Any]) -> Callable[P, AsyncGenerator[Event, None]]: ...
    @overload
    def __get__(self, client: RegistryClient, owner: type[Any]) -> Callable[P, Iterator[Event]]: ...
    def __get__(self, client: _ClientOptions | None, owner: type[Any]) -> Any:
        return self.bind(client)


class _ClientOptions:
    """What both clients share: where the directory is, how to talk to it, and the API."""

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

    def _unreachable(self, error: httpx.TransportError) -> DirectoryUnreachable:
        return DirectoryUnreachable(f"{self.base_url} is unreachable: {error!r}")

    # -- the API (docs/live-directory.md lists each method with its endpoint)
    register = Operation(calls.register)
    register_batch = Operation(calls.register_batch)
    replace = Operation(calls.replace)
    patch = Operation(calls.patch)
    delete = Operation(calls.delete)
    get = Operation(calls.get)
    iter_things = Listing(calls.iter_things)
    renew_lease = Operation(calls.renew_lease)
    search = Operation(calls.search)
    iter_search = Listing(calls.iter_search)
    find = Operation(calls.find)
    facets = Operation(calls.facets)
    summary = Operation(calls.summary)
    versions = Operation(calls.versions)
    iter_versions = Listing(calls.iter_versions)
    version = Operation(calls.version)
    recent_changes = Operation(calls.recent_changes)
    sparql = Operation(calls.sparql)
    sparql_graph = Operation(calls.sparql_graph)
    jsonpath = Operation(calls.jsonpath)
    resolve = Operation(calls.resolve)
    compatibility = Operation(calls.compatibility)
    compare = Operation(calls.compare)
    import_tool = Operation(calls.import_tool)
    import_card = Operation(calls.import_card)
    export = Operation(calls.export)
    watch = Watch(calls.subscribe)
    events = Events(calls.subscribe)
    list = Operation(calls.list_things)  # last: the name ``list`` is the builtin above this line


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

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _run(self, call: calls.Call[T]) -> T:
        try:
            response = await self.http.send(call.request(self.http))
        except httpx.TransportError as error:
            if not call.retried_after(error):
                raise self._unreachable(error) from error
            try:  # on a new connection: the pool has dropped the one the server closed
                response = await self.http.send(call.request(self.http))
            except httpx.TransportError as again:
                raise self._unreachable(again) from again
        return call.parse(response)

    def _operation(self, build: Callable[P, calls.Call[T]]) -> Callable[P, Coroutine[Any, Any, T]]:
        async def method(*args: P.args, **kwargs: P.kwargs) -> T:
            return await self._run(build(*args, **kwargs))

        return method

    def _listing(self, build: Callable[P, calls.Call[calls.Page[Item]]]) -> Callable[P, AsyncIterator[Item]]:
        async def method(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[Item]:
            call: calls.Call[calls.Page[Item]] | None = build(*args, **kwargs)
            while call is not None:
                page = await self._run(call)
                for item in page.items:
                    yield item
                call = page.next

        return method

    def _watch(self, build: Callable[P, calls.Subscription]) -> Callable[P, AsyncEventStream]:
        def method(*args: P.args, **kwargs: P.kwargs) -> AsyncEventStream:
            return AsyncEventStream(self.http, self._run, self.stream_timeout, build(*args, **kwargs))

        return method

    def _events(self, build: Callable[P, calls.Subscription]) -> Callable[P, AsyncGenerator[Event, None]]:
        async def method(*args: P.args, **kwargs: P.kwargs) -> AsyncGenerator[Event, None]:
            async with AsyncEventStream(self.http, self._run, self.stream_timeout, build(*args, **kwargs)) as events:
                async for event in events:
                    yield event

        return method


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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _run(self, call: calls.Call[T]) -> T:
        try:
            response = self.http.send(call.request(self.http))
        except httpx.TransportError as error:
            if not call.retried_after(error):
                raise self._unreachable(error) from error
            try:  # on a new connection: the pool has dropped the one the server closed
                response = self.http.send(call.request(self.http))
            except httpx.TransportError as again:
                raise self._unreachable(again) from again
        return call.parse(response)

    def _operation(self, build: Callable[P, calls.Call[T]]) -> Callable[P, T]:
        def method(*args: P.args, **kwargs: P.kwargs) -> T:
            return self._run(build(*args, **kwargs))

        return method

    def _listing(self, build: Callable[P, calls.Call[calls.Page[Item]]]) -> Callable[P, Iterator[Item]]:
        def method(*args: P.args, **kwargs: P.kwargs) -> Iterator[Item]:
            call: calls.Call[calls.Page[Item]] | None = build(*args, **kwargs)
            while call is not None:
                page = self._run(call)
                yield from page.items
                call = page.next

        return method

    def _watch(self, build: Callable[P, calls.Subscription]) -> Callable[P, EventStream]:
        def method(*args: P.args, **kwargs: P.kwargs) -> EventStream:
            return EventStream(self.http, self._run, self.stream_timeout, build(*args, **kwargs))

        return method

    def _events(self, build: Callable[P, calls.Subscription]) -> Callable[P, Iterator[Event]]:
        def method(*args: P.args, **kwargs: P.kwargs) -> Iterator[Event]:
            with EventStream(self.http, self._run, self.stream_timeout, build(*args, **kwargs)) as events:
                yield from events

        return method


__all__ = ["DEFAULT_URL", "AsyncRegistryClient", "RegistryClient", "default_url"]
