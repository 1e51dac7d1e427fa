"""The ops dashboard at ``/dashboard``: one static page, one ES module and one stylesheet shipped in the package.

The page reads only the public REST APIs (``/api/v1``, ``/things``, ``/search/stats``, ``/events``); nothing is
built or fetched from elsewhere, so it works offline. The Content-Security-Policy allows this origin only, so
even a description that smuggled markup past the page's textContent-only rendering could not run a script.
"""

from __future__ import annotations

import functools
from importlib import resources

from litestar import Response, Router, get
from litestar.params import FromPath

from registry.errors import NotFound

#: The files the dashboard consists of, with their media types; nothing else is served from the folder.
ASSETS = {
    "index.html": "text/html",
    "dashboard.js": "text/javascript",
    "dashboard.css": "text/css",
    "favicon.svg": "image/svg+xml",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # Small files shipped with the release: revalidate so an upgrade is seen at once.
    "Cache-Control": "no-cache",
}


@functools.cache
def _asset(name: str) -> bytes:
    return resources.files("registry.http").joinpath("dashboard", name).read_bytes()


def _serve(name: str) -> Response[bytes]:
    return Response(content=_asset(name), media_type=ASSETS[name], headers=SECURITY_HEADERS)


@get("/", operation_id="dashboard", summary="The ops dashboard (HTML)", include_in_schema=False)
async def page() -> Response[bytes]:
    return _serve("index.html")


@get("/{name:str}", operation_id="dashboardAsset", summary="A file of the ops dashboard", include_in_schema=False)
async def asset(name: FromPath[str]) -> Response[bytes]:
    if name not in ASSETS or name == "index.html":
        raise NotFound(f"The dashboard has no file {name!r}")
    return _serve(name)


#: The page and its files are public; the API calls it makes carry the token the user gives it (docs/security.md).
dashboard = Router(path="/dashboard", route_handlers=[page, asset], opt={"access": "public"})
