"""The API docs at ``/schema/swagger``: Swagger UI whose files come from the ``swagger-ui-py`` package, served here.

Litestar's Swagger page loads Swagger UI from a CDN, so offline it is a blank page. This one points the page at
the same files shipped in the package (Swagger UI 5, which reads OpenAPI 3.1) and serves them from this server.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

from litestar import Request, Response, Router, get
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.params import FromPath

from registry.errors import NotFound
from registry.http.contract import ContractDocument

#: Where the files are served, under the OpenAPI router (``/schema``).
ASSETS_PATH = "/swagger-ui"
#: The files the page loads, with their media types; nothing else is served from the package.
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui-standalone-preset.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}


@functools.cache
def _asset(name: str) -> bytes:
    return resources.files("swagger_ui").joinpath("static", name).read_bytes()


@get(
    f"{ASSETS_PATH}/{{name:str}}",
    operation_id="apiDocsAsset",
    summary="A file of the API docs page",
    include_in_schema=False,
    sync_to_thread=False,
)
def api_docs_asset(name: FromPath[str]) -> Response[bytes]:
    if name not in ASSETS:
        raise NotFound(f"The API docs have no file {name!r}")
    return Response(content=_asset(name), media_type=ASSETS[name], headers={"Cache-Control": "no-cache"})


class OfflineSwaggerUI(SwaggerRenderPlugin):
    """Swagger UI with every file it loads served by the OpenAPI router itself."""

    def __init__(self, schema_path: str, contract: ContractDocument) -> None:
        self.contract = contract
        base = f"{schema_path}{ASSETS_PATH}"
        super().__init__(
            js_url=f"{base}/swagger-ui-bundle.js",
            css_url=f"{base}/swagger-ui.css",
            standalone_preset_js_url=f"{base}/swagger-ui-standalone-preset.js",
            favicon=f"<link rel='icon' type='image/png' href='{base}/favicon-32x32.png'>",
        )

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return super().render(request, self.contract.of(request, openapi_schema))

    def receive_router(self, router: Router) -> None:
        super().receive_router(router)
        router.register(api_docs_asset)


__all__ = ["OfflineSwaggerUI"]
