"""``AgentRegistration``: register on startup, keep the lease alive, deregister on shutdown.

While the directory is unreachable it retries with exponential backoff; if the registration expired meanwhile
(renewal answers 404) it registers again. A refusal that retrying cannot change (400, 401, 403, 409, …) is raised
at once: by ``start()`` for the first registration, later by ``wait_for_shutdown()``.

SIGTERM and SIGINT end ``wait_for_shutdown()`` so the ``async with`` block exits and deregisters; the blocking
``SyncAgentRegistration`` turns them into ``SystemExit``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Mapping
from types import FrameType
from typing import Any

from registry.client.clients import AsyncRegistryClient
from registry.client.errors import DirectoryUnreachable, NotFoundError, ProblemError

log = logging.getLogger(__name__)

_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: Error statuses worth retrying; any other 4xx is permanent (bad credentials, not the owner, invalid TD, …).
_TRANSIENT = frozenset({408, 425, 429})


def is_permanent(error: ProblemError) -> bool:
    return 400 <= error.status < 500 and error.status not in _TRANSIENT and not isinstance(error, NotFoundError)


class AgentRegistration:
    """``async with AgentRegistration(url_or_client, document, ttl=30, token=…) as agent: ...``

    Given a URL (or None: REGISTRY_URL), it makes its own client with ``token`` (default: REGISTRY_TOKEN) and
    closes it on ``stop()``; a client given is the caller's to close, and carries its own credentials.
    """

    def __init__(
        self,
        client: AsyncRegistryClient | str | None,
        document: Mapping[str, Any],
        *,
        ttl: float,
        token: str | None = None,
        renew_every: float | None = None,
        max_backoff: float = 30.0,
        handle_signals: bool = True,
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if isinstance(client, AsyncRegistryClient) and token is not None:
            raise ValueError("token goes with a URL; a client carries its own (AsyncRegistryClient(url, token=…))")
        self._own_client = not isinstance(client, AsyncRegistryClient)
        self.client = client if isinstance(client, AsyncRegistryClient) else AsyncRegistryClient(client, token=token)
        self.document = dict(document)
        self.ttl = ttl
        #: Renew well before expiry, so one failed renewal does not lose the registration.
        self.renew_every = renew_every if renew_every is not None else ttl / 3
        self.max_backoff = max_backoff
        self.handle_signals = handle_signals
        self.thing_id: str | None = self.document.get("id")
        #: Set once the directory has accepted the registration.
        self.registered = asyncio.Event()
        #: The permanent refusal that ended the registration, if any.
        self.failure: ProblemError | None = None
        self._first_attempt = asyncio.Event()
        self._shutdown = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> AgentRegistration:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self.handle_signals:
            loop = asyncio.get_running_loop()
            for signum in _SIGNALS:
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(signum, self._shutdown.set)
        self._task = asyncio.create_task(self._keep_alive(), name="agent-registration")
        await self._first_attempt.wait()
        if self.failure is not None:
            await self.stop()
            raise self.failure

    async def wait_for_shutdown(self) -> None:
        """Returns on SIGTERM/SIGINT (with ``handle_signals``) or ``request_shutdown()``; raises a permanent
        refusal of the directory (e.g. a revoked key) that ended the registration."""
        await self._shutdown.wait()
        if self.failure is not None:
            raise self.failure

    def request_shutdown(self) -> None:
        self._shutdown.set()

    async def stop(self) -> None:
        """Stop renewing and deregister (best effort: an unreachable directory lets the lease expire)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.handle_signals:
            loop = asyncio.get_running_loop()
            for signum in _SIGNALS:
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(signum)
        if self.registered.is_set() and self.thing_id:
            try:
                await self.client.delete(self.thing_id)
            except NotFoundError:
                pass
            except (DirectoryUnreachable, ProblemError) as error:
                log.warning("could not deregister %s (%s); its lease will expire", self.thing_id, error)
            self.registered.clear()
        if self._own_client:
            await self.client.aclose()

    async def _register(self) -> None:
        result = await self.client.register(self.document, ttl=self.ttl)
        self.thing_id = result.id
        self.document["id"] = result.id
        self.registered.set()
        log.info("registered %s with ttl %s s", result.id, self.ttl)

    async def _keep_alive(self) -> None:
        backoff = min(1.0, self.renew_every)
        needs_registration = True
        while True:
            try:
                if needs_registration:
                    await self._register()
                    needs_registration = False
                else:
                    assert self.thing_id is not None
                    await self.client.renew_lease(self.thing_id)
                self._first_attempt.set()
                backoff = min(1.0, self.renew_every)
                await asyncio.sleep(self.renew_every)
            except NotFoundError:
                log.warning("lease of %s was lost; registering again", self.thing_id)
                needs_registration = True
            except (DirectoryUnreachable, ProblemError) as error:
                self._first_attempt.set()
                if isinstance(error, ProblemError) and is_permanent(error):
                    log.error("the directory refused the registration of %s: %s", self.thing_id, error)
                    self.failure = error
                    self._shutdown.set()
                    return
                log.warning("directory unavailable (%s); retrying in %.1f s", error, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff)


class SyncAgentRegistration:
    """``with SyncAgentRegistration(url, document, ttl=30): ...`` for blocking programs.

    Renews from a background thread with its own event loop. With ``handle_signals`` (main thread only),
    SIGTERM raises ``SystemExit`` in the main thread, so the ``with`` block exits and deregisters.
    """

    def __init__(
        self,
        base_url: str | None,
        document: Mapping[str, Any],
        *,
        ttl: float,
        handle_signals: bool = True,
        token: str | None = None,
        **options: Any,
    ) -> None:
        self.base_url = base_url
        #: API key or access token (default: REGISTRY_TOKEN).
        self.token = token
        self.document = document
        self.ttl = ttl
        self.options = options
        self.handle_signals = handle_signals
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agent-registration", daemon=True)
        self._registration: AgentRegistration | None = None
        self._previous_handler: Any = None

    @property
    def thing_id(self) -> str | None:
        return self._registration.thing_id if self._registration else None

    def __enter__(self) -> SyncAgentRegistration:
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        except BaseException:
            self._close_loop()
            raise
        if self.handle_signals and threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGTERM, _exit_on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous_handler is not None:
            signal.signal(signal.SIGTERM, self._previous_handler)
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result()
        self._close_loop()

    def _close_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def wait_registered(self, timeout: float | None = None) -> bool:
        assert self._registration is not None
        registered = self._registration.registered
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(registered.wait(), timeout), self._loop)
        try:
            future.result()
        except TimeoutError:
            return False
        return True

    async def _start(self) -> None:
        self._registration = AgentRegistration(
            self.base_url, self.document, ttl=self.ttl, token=self.token, handle_signals=False, **self.options
        )
        await self._registration.start()

    async def _stop(self) -> None:
        assert self._registration is not None
        await self._registration.stop()


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


__all__ = ["AgentRegistration", "SyncAgentRegistration"]
