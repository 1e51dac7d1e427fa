"""Event streams of ``watch``: subscribed once entered, reconnected and resumed as the ``Subscription`` says.

``calls.Subscription`` decides everything (what to request, where to resume, what to deliver, whether to retry);
these two classes only do the I/O, one with asyncio, one blocking.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from typing import Self

import httpx
import httpx_sse

from registry.client import calls
from registry.client.errors import DirectoryUnreachable, ProblemError, problem_from
from registry.client.models import Event


class AsyncEventStream:
    """``async with client.watch(...) as events``: once entered, every later change reaches ``async for event in
    events``, across broken connections. ``last_event_id`` is where another subscription could resume."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        run: Callable[[calls.Call[int]], Awaitable[int]],
        timeout: httpx.Timeout,
        subscription: calls.Subscription,
    ) -> None:
        self._http = http
        self._run = run
        self._timeout = timeout
        self._subscription = subscription
        self._response: contextlib.AsyncExitStack | None = None
        self._messages: AsyncGenerator[httpx_sse.ServerSentEvent, None] | None = None

    @property
    def last_event_id(self) -> int | str | None:
        return self._subscription.last_event_id

    async def __aenter__(self) -> Self:
        start = self._subscription.start()
        if start is not None:
            self._subscription.began(await self._run(start))
        await self._connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._disconnect()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._messages is None:
                await self._reconnect()
                assert self._messages is not None
            try:
                message = await anext(self._messages)
            except StopAsyncIteration:  # the directory ended the stream (shutting down, or this reader fell behind)
                broken: DirectoryUnreachable | None = None
            except httpx.TransportError as error:
                broken = DirectoryUnreachable(f"event stream from {self._http.base_url} broke: {error!r}")
            else:
                if (event := self._subscription.receive(message)) is not None:
                    return event
                continue
            await self._disconnect()
            if not self._subscription.reconnect:
                if broken is not None:
                    raise broken
                raise StopAsyncIteration

    async def _reconnect(self) -> None:
        while True:
            await asyncio.sleep(self._subscription.retry_delay)
            try:
                await self._connect()
                return
            except (DirectoryUnreachable, ProblemError) as error:
                if not self._subscription.may_retry(error):
                    raise

    async def _connect(self) -> None:
        path, params, headers = self._subscription.request()
        response = contextlib.AsyncExitStack()
        try:
            source = await response.enter_async_context(
                httpx_sse.aconnect_sse(self._http, "GET", path, params=params, headers=headers, timeout=self._timeout)
            )
            if source.response.status_code >= 400:
                await source.response.aread()
                raise problem_from(source.response)
            self._subscription.subscribed(source.response.headers.get(calls.STREAM_POSITION))
        except BaseException as error:
            await response.aclose()
            if isinstance(error, httpx.TransportError):
                raise DirectoryUnreachable(f"{self._http.base_url} is unreachable: {error!r}") from error
            raise
        self._response = response
        self._messages = source.aiter_sse()

    async def _disconnect(self) -> None:
        if self._messages is not None:
            await self._messages.aclose()
            self._messages = None
        if self._response is not None:
            await self._response.aclose()
            self._response = None


class EventStream:
    """``with client.watch(...) as events``: the blocking twin of ``AsyncEventStream``."""

    def __init__(
        self,
        http: httpx.Client,
        run: Callable[[calls.Call[int]], int],
        timeout: httpx.Timeout,
        subscription: calls.Subscription,
    ) -> None:
        self._http = http
        self._run = run
        self._timeout = timeout
        self._subscription = subscription
        self._response: contextlib.ExitStack | None = None
        self._messages: Iterator[httpx_sse.ServerSentEvent] | None = None

    @property
    def last_event_id(self) -> int | str | None:
        return self._subscription.last_event_id

    def __enter__(self) -> Self:
        start = self._subscription.start()
        if start is not None:
            self._subscription.began(self._run(start))
        self._connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self._disconnect()

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> Event:
        while True:
            if self._messages is None:
                self._reconnect()
                assert self._messages is not None
            try:
                message = next(self._messages)
            except StopIteration:  # the directory ended the stream (shutting down, or this reader fell behind)
                broken: DirectoryUnreachable | None = None
            except httpx.TransportError as error:
                broken = DirectoryUnreachable(f"event stream from {self._http.base_url} broke: {error!r}")
            else:
                if (event := self._subscription.receive(message)) is not None:
                    return event
                continue
            self._disconnect()
            if not self._subscription.reconnect:
                if broken is not None:
                    raise broken
                raise StopIteration

    def _reconnect(self) -> None:
        while True:
            time.sleep(self._subscription.retry_delay)
            try:
                self._connect()
                return
            except (DirectoryUnreachable, ProblemError) as error:
                if not self._subscription.may_retry(error):
                    raise

    def _connect(self) -> None:
        path, params, headers = self._subscription.request()
        response = contextlib.ExitStack()
        try:
            source = response.enter_context(
                httpx_sse.connect_sse(self._http, "GET", path, params=params, headers=headers, timeout=self._timeout)
            )
            if source.response.status_code >= 400:
                source.response.read()
                raise problem_from(source.response)
            self._subscription.subscribed(source.response.headers.get(calls.STREAM_POSITION))
        except BaseException as error:
            response.close()
            if isinstance(error, httpx.TransportError):
                raise DirectoryUnreachable(f"{self._http.base_url} is unreachable: {error!r}") from error
            raise
        self._response = response
        self._messages = source.iter_sse()

    def _disconnect(self) -> None:
        self._messages = None
        if self._response is not None:
            self._response.close()
            self._response = None


__all__ = ["AsyncEventStream", "EventStream"]
