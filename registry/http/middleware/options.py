"""``OPTIONS`` answers ``Allow`` with every method of the route. Litestar builds one ``OPTIONS`` handler per route
from the handlers it was first given, and keeps it when handlers of other controllers join the same path, so
``/things`` said ``OPTIONS, POST`` without ``GET``. This middleware runs after routing and puts the methods of the
whole route in ``Allow``."""

from __future__ import annotations

from litestar import Litestar
from litestar.datastructures import MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.routes import HTTPRoute
from litestar.types import ASGIApp, Message, Receive, Scope, Send

_STATE_KEY = "allow_by_path"


def _allow(methods: set[str]) -> str:
    """``HEAD`` is answered wherever ``GET`` is (registry/http/middleware/head.py)."""
    return ", ".join(sorted(methods | {"HEAD"} if "GET" in methods else methods))


def _allow_by_path(app: Litestar) -> dict[str, str]:
    allow: dict[str, str] | None = app.state.get(_STATE_KEY)
    if allow is None:
        methods: dict[str, set[str]] = {}
        for route in app.routes:
            if isinstance(route, HTTPRoute):
                methods.setdefault(route.path_format, set()).update(route.methods)
        allow = {path: _allow(names) for path, names in methods.items()}
        app.state[_STATE_KEY] = allow
    return allow


def allow_every_method(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or scope["method"] != "OPTIONS":
            await app(scope, receive, send)
            return
        allow = _allow_by_path(scope["litestar_app"]).get(scope.get("path_template", ""))

        async def send_with_allow(message: Message) -> None:
            if allow is not None and message["type"] == "http.response.start" and message["status"] == 204:
                headers = MutableScopeHeaders.from_message(message)
                if "allow" in headers:
                    headers["Allow"] = allow
            await send(message)

        await app(scope, receive, send_with_allow)

    return middleware


__all__ = ["allow_every_method"]
