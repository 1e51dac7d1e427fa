"""Access control at the HTTP edge: one guard authenticates each request, checks its scope and counts it.

Each route says what it needs in ``opt={"access": …}``: ``public`` (the directory TD, the dashboard, the API
document), ``read``, ``write`` or ``admin``; without it, GET and HEAD need ``read`` and other methods ``write``.
The verified principal is kept in the request scope for the handlers (``principal_of``), which hand it to the
services: ownership and namespaces are checked there (registry/auth/ownership.py), under the id's lock.
The guard is installed only when authentication or a limit is on, so an open loopback directory pays nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from litestar import Litestar
from litestar.connection import ASGIConnection
from litestar.handlers import BaseRouteHandler, HTTPRouteHandler
from litestar.openapi.spec import Components, Reference, SecurityRequirement, SecurityScheme
from litestar.types import Guard

from registry.auth.authenticator import AuthMode
from registry.auth.principal import Principal, Scope
from registry.auth.tenancy import EVERYTHING, TenantScope, tenant_scope
from registry.errors import Unauthorized
from registry.http.dependencies import Access, ServiceHolder
from registry.http.middleware.addresses import client_key

PUBLIC = "public"
#: ``opt`` of routes that also take the credential as ``?access_token=`` (RFC 6750 §2.3): event streams, because a
#: browser's EventSource cannot send an Authorization header. The access log records paths without queries.
QUERY_TOKEN = "query_token"
#: Names of the security schemes in the OpenAPI document: both travel as ``Authorization: Bearer …``.
API_KEY = "apiKey"
ACCESS_TOKEN = "accessToken"
READ_METHODS = frozenset({"GET", "HEAD"})
#: Path prefixes of routes the framework adds (the OpenAPI document and its renderers).
PUBLIC_PREFIXES = ("/schema",)
#: ``opt`` of routes whose handler counts the writes of a request itself (a batch counts one per description): the
#: guard only checks that one more fits, so that a client out of writes is refused before its body is read.
WRITES_COUNTED_BY_HANDLER = "writes_counted_by_handler"


def requester(connection: ASGIConnection[Any, Any, Any, Any]) -> str:
    """Who a request counts against for limits: its principal, or its client address when anonymous."""
    principal = principal_of(connection)
    if principal is not None:
        return f"principal:{principal.actor}"
    return client_address(connection.scope)


def client_address(scope: Mapping[str, object]) -> str:
    """The client a request counts against by its address (``client_key``: an IPv6 client by its /64), as a
    requester: what failed authentications count, and anonymous requests."""
    client = scope.get("client")
    host = client[0] if isinstance(client, tuple | list) and client else None
    return f"address:{client_key(host) if isinstance(host, str) else 'unknown'}"


def tenant_scope_of(connection: ASGIConnection[Any, Any, Any, Any]) -> TenantScope:
    """Which descriptions the request may read (registry/auth/tenancy.py); everything without the guard."""
    scope = connection.scope.get("auth")
    return scope if isinstance(scope, TenantScope) else EVERYTHING


def principal_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Principal | None:
    """The request's verified principal; None when anonymous or with authentication off."""
    principal = connection.scope.get("user")
    return principal if isinstance(principal, Principal) else None


def declared_access(handler: BaseRouteHandler, methods: Iterable[str]) -> Scope | None:
    """The scope a route handler needs for ``methods``; None for public routes."""
    declared = handler.opt.get("access")
    if declared == PUBLIC:
        return None
    if declared is not None:
        return Scope(declared)
    return Scope.READ if set(methods) <= READ_METHODS else Scope.WRITE


def needed_access(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> Scope | None:
    """The scope a request needs; None for public routes."""
    if connection.scope["path"].startswith(PUBLIC_PREFIXES):
        return None
    return declared_access(handler, (str(connection.scope.get("method", "GET")),))


def security_components(issuer: str) -> Components:
    """The OpenAPI document's security schemes, declared whatever the mode (a client generated from a loopback
    directory's document also works against one with authentication on): an API key of this directory, and with
    an identity provider (``issuer``) its access tokens (JWT). Both are HTTP bearer credentials."""
    schemes: dict[str, SecurityScheme | Reference] = {
        API_KEY: SecurityScheme(
            type="http",
            scheme="bearer",
            description="An API key of this directory (`registry keys create`), sent as `Authorization: Bearer <key>`",
        )
    }
    if issuer:
        schemes[ACCESS_TOKEN] = SecurityScheme(
            type="http",
            scheme="bearer",
            bearer_format="JWT",
            description=f"An access token (JWT) issued by {issuer}, sent as `Authorization: Bearer <token>`",
        )
    return Components(security_schemes=schemes)


def declare_security(app: Litestar, mode: AuthMode, issuer: str) -> None:
    """Each operation of the OpenAPI document says, by the same rule as the guard, whether it needs a credential
    (writes; every operation with REGISTRY_AUTH=all), may carry one (reads with REGISTRY_AUTH=writes: verified
    when given; every operation with authentication off, where it is not needed) or is public (``[{}]``)."""
    names = [API_KEY, ACCESS_TOKEN] if issuer else [API_KEY]
    credentials: list[SecurityRequirement] = [{name: []} for name in names]
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            if not isinstance(handler, HTTPRouteHandler):
                continue
            needed = declared_access(handler, handler.http_methods)
            if needed is None:
                handler.security = [{}]
            elif mode is AuthMode.ALL or (mode is AuthMode.WRITES and needed is not Scope.READ):
                handler.security = list(credentials)
            else:
                handler.security = [{}, *credentials]


async def authenticate(access: Access, authorization: str | None, needed: Scope, address: str) -> Principal | None:
    """``Authenticator.authorize``, with the failed authentications of the client at ``address`` counted: once
    they are used up (``REGISTRY_RATE_LIMIT_AUTH_FAILURES``), a request carrying credentials gets 429 without them
    being checked, so nobody can go on guessing keys or tokens."""
    if authorization is None:
        return await access.authenticator.authorize(None, needed)
    access.limits.refuse_after_failed_authentications(address)
    try:
        return await access.authenticator.authorize(authorization, needed)
    except Unauthorized:
        access.limits.count_failed_authentication(address)
        raise


def access_guard(holder: ServiceHolder) -> Guard:
    async def guard(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
        needed = needed_access(connection, handler)
        if needed is None:
            return
        access = holder.services.access
        authorization = connection.headers.get("authorization")
        if authorization is None and handler.opt.get(QUERY_TOKEN) and "access_token" in connection.query_params:
            authorization = "Bearer " + connection.query_params["access_token"]
        principal = await authenticate(access, authorization, needed, client_address(connection.scope))
        connection.scope["user"] = principal
        connection.scope["auth"] = tenant_scope(principal, access.authenticator.mode)
        if handler.opt.get(WRITES_COUNTED_BY_HANDLER):
            access.limits.check(needed, requester(connection))
        else:
            access.limits.hit(needed, requester(connection))

    return guard


__all__ = [
    "ACCESS_TOKEN",
    "API_KEY",
    "PUBLIC",
    "QUERY_TOKEN",
    "WRITES_COUNTED_BY_HANDLER",
    "access_guard",
    "authenticate",
    "client_address",
    "declare_security",
    "needed_access",
    "principal_of",
    "requester",
    "security_components",
    "tenant_scope_of",
]
