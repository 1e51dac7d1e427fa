"""The directory's own Thing Description at ``/.well-known/wot`` (WoT Discovery §6.1, RFC 8615).

Derived from the W3C Directory Thing Model (the current one, whose ``things`` property has a data schema): the
base URL filled in, only the affordances this server implements, a request ``contentType`` on the SPARQL POST
form, a ``contentType`` on every response so the TD passes the TD 1.1 JSON Schema, and a TD 1.0-compatible
``@context`` (TD 1.1 §5.3.1.1) so that consumers that only know TD 1.0 accept it.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable
from importlib import resources
from typing import Any

from litestar import Response, get
from litestar.di import NamedDependency

from registry.auth.authenticator import AuthMode
from registry.descriptions.model import TD10_CONTEXT, TD11_CONTEXT
from registry.http.bodies import EMPTY, TD_JSON
from registry.http.contract import JSON_OBJECT, Answer, documented
from registry.http.dependencies import DirectoryTd

#: Affordances of the Directory Thing Model that the core implements; other modules add theirs.
CORE_AFFORDANCES = frozenset(
    {
        "things",
        "createThing",
        "createAnonymousThing",
        "retrieveThing",
        "updateThing",
        "partiallyUpdateThing",
        "deleteThing",
    }
)

#: Affordances that change the directory: with REGISTRY_AUTH=writes only their forms need a bearer credential.
WRITE_AFFORDANCES = frozenset(
    {"createThing", "createAnonymousThing", "updateThing", "partiallyUpdateThing", "deleteThing"}
)

#: Search affordances; searchXPath is left out: /search/xpath answers 501.
SEARCH_AFFORDANCES = frozenset({"searchSPARQL", "searchJSONPath"})

#: What a request to a form of the model carries when the model names no ``contentType``, by method and href.
_REQUEST_CONTENT_TYPES = {("POST", "/search/sparql"): "application/sparql-query"}


@functools.cache
def _thing_model() -> dict[str, Any]:
    text = resources.files("registry.http").joinpath("directory.tm.jsonld").read_text(encoding="utf-8")
    model: dict[str, Any] = json.loads(text)
    return model


def _compatible_context(model_context: list[Any]) -> list[Any]:
    """The model's context with the TD 1.0 context before the TD 1.1 one (TD 1.1 §5.3.1.1)."""
    rest = [entry for entry in model_context if entry not in (TD10_CONTEXT, TD11_CONTEXT)]
    return [TD10_CONTEXT, TD11_CONTEXT, *rest]


def _add_request_content_types(affordance: dict[str, Any]) -> None:
    for form in affordance.get("forms", []):
        content_type = _REQUEST_CONTENT_TYPES.get((form.get("htv:methodName", ""), form.get("href", "")))
        if content_type and "contentType" not in form:
            form["contentType"] = content_type


def _add_response_content_types(node: Any) -> None:
    if isinstance(node, dict):
        response = node.get("response")
        if isinstance(response, dict) and "contentType" not in response:
            response["contentType"] = EMPTY
        for value in node.values():
            _add_response_content_types(value)
    elif isinstance(node, list):
        for value in node:
            _add_response_content_types(value)


def directory_description(
    base_url: str,
    affordances: Iterable[str],
    directory_id: str,
    *,
    mode: AuthMode = AuthMode.OFF,
    issuer: str = "",
) -> dict[str, Any]:
    """The TD of this directory; its security says how to authenticate (``tdd-things-read-only-auth``): nosec
    with authentication off, bearer on every form with REGISTRY_AUTH=all, bearer on the write forms only with
    ``writes`` (its authorization server named when access tokens come from an identity provider)."""
    model = copy.deepcopy(_thing_model())
    implemented = set(affordances)
    description: dict[str, Any] = {
        "@context": _compatible_context(model["@context"]),
        "@type": "ThingDirectory",
        "id": directory_id,
        "title": "LMOS Agent and Tool Registry",
        "description": "A W3C WoT Thing Description Directory for AI agents and tools (Eclipse LMOS).",
        "version": {"instance": package_version()},
        "base": base_url + "/",
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
    }
    for kind in ("properties", "actions", "events"):
        chosen = {name: value for name, value in model.get(kind, {}).items() if name in implemented}
        for affordance in chosen.values():
            _add_request_content_types(affordance)
            for form in affordance.get("forms", []):
                form["href"] = form["href"].lstrip("/")
        if chosen:
            description[kind] = chosen
    _declare_security(description, mode, issuer)
    _add_response_content_types(description)
    return description


def _declare_security(description: dict[str, Any], mode: AuthMode, issuer: str) -> None:
    if mode is AuthMode.OFF:
        return
    bearer: dict[str, Any] = {"scheme": "bearer", "in": "header", "name": "Authorization"}
    if issuer:
        bearer.update({"authorization": issuer, "format": "jwt"})
    description["securityDefinitions"]["bearer_sc"] = bearer
    if mode is AuthMode.ALL:
        description["security"] = "bearer_sc"
        return
    for name, affordance in description.get("actions", {}).items():
        if name in WRITE_AFFORDANCES:
            for form in affordance.get("forms", []):
                form["security"] = "bearer_sc"


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lmos-registry")
    except PackageNotFoundError:
        return "0.0.0"


@get(
    ["/.well-known/wot"],
    operation_id="directoryDescription",
    summary="The directory's Thing Description",
    tags=["Things (WoT Discovery)"],
    opt={
        "access": "public",
        **documented(
            answers={
                200: Answer("The directory's own Thing Description (W3C WoT Discovery §7.3)", {TD_JSON: JSON_OBJECT})
            }
        ),
    },
)
async def well_known_wot(directory_td: NamedDependency[DirectoryTd]) -> Response[bytes]:
    return Response(content=directory_td.json, media_type=TD_JSON)
