"""The OpenAPI document as the contract: what Litestar infers, completed by what each handler declares.

Litestar documents typed parameters, typed bodies and typed return values by itself. Handlers that read the
request themselves (a Thing Description in one of three media types, a merge patch, SPARQL forms, streams)
declare the rest next to their route with ``opt=documented(...)``: the request body per media type, the query
parameters they read, their success answers with media types and headers, and the problems they can answer
with. Every operation also gets the problems any operation can answer (400 for bad query parameters, 404 under
a path with an id, 413/415 with a body, 503 while the database is unavailable), all as RFC 7807
``application/problem+json`` with ``validationErrors`` and ``invalidParams``. The framework's own error shape
(``status_code``, ``detail``, ``extra``), which this server never sends, is removed.

The completion is applied to the document as it is served (``ContractJson`` and the Swagger page), computed once.
New endpoints are documented by the same mechanism: declare ``opt=documented(...)`` on the route.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from importlib import resources
from typing import Any, Literal

import msgspec
from litestar import Litestar, Request
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.routes import HTTPRoute

from registry.wire import Problem, WriteNotices

#: Key of the handler's ``opt`` holding its ``Contract``.
CONTRACT = "contract"
PROBLEM_JSON = "application/problem+json"
COMPONENTS = "#/components/schemas/"
Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": COMPONENTS + name}


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """A success answer: its media types (each with a schema) and the headers it carries."""

    description: str
    content: Mapping[str, Schema] = dataclasses.field(default_factory=dict)
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    example: Any = None


@dataclasses.dataclass(frozen=True, slots=True)
class Body:
    """The request body, one schema per accepted media type."""

    content: Mapping[str, Schema]
    description: str = ""
    examples: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class Param:
    name: str
    description: str
    schema: Schema = dataclasses.field(default_factory=lambda: {"type": "string"})
    location: Literal["query", "header"] = "query"
    required: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Contract:
    """What a handler answers beyond what Litestar infers from its signature."""

    #: Success answers by status; given, they replace the inferred ones.
    answers: Mapping[int, Answer] = dataclasses.field(default_factory=dict)
    #: Problems beyond the common ones, by status, with when they happen.
    problems: Mapping[int, str] = dataclasses.field(default_factory=dict)
    body: Body | None = None
    parameters: Sequence[Param] = ()
    #: Problems every operation can answer are added unless False (e.g. liveness answers without the database).
    common_problems: bool = True
    #: The media type problems travel as (the MCP Registry API sends them as application/json).
    problem_media_type: str = PROBLEM_JSON


def documented(**contract: Any) -> dict[str, Contract]:
    """``opt`` for a route handler: ``@get(..., opt=documented(answers=..., problems=...))``."""
    return {CONTRACT: Contract(**contract)}


def imported_answers(result: str) -> dict[str, Contract]:
    """Imports (tools, agent cards) store a description: 201 when new, 200 when it replaced one."""
    headers = {"Location": "The id of the stored description", "Registry-Notices": NOTICES}
    content = {"application/json": ref(result)}
    return documented(
        answers={
            201: Answer("Stored as a new description", content, headers),
            200: Answer("Replaced the description stored under this id", content, headers),
        }
    )


# -- schemas shared by several operations

JSON_OBJECT: Schema = {"type": "object", "additionalProperties": True}
THING_DESCRIPTION: Schema = {
    "type": "object",
    "description": (
        "A W3C WoT Thing Description (TD 1.1; 1.0 accepted). LMOS agents and tools are descriptions with @type "
        "lmos:Agent or lmos:Tool and lmos:metadata / lmos:capabilities. Validated against the TD JSON Schema; "
        "an invalid one is refused with validationErrors."
    ),
    "required": ["@context", "title", "security", "securityDefinitions"],
    "properties": {
        "@context": {"description": "The TD context URI, alone or first in an array"},
        "@type": {
            "description": "E.g. lmos:Agent, lmos:Tool",
            "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
        },
        "id": {"type": "string", "format": "uri"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "version": {"type": "object", "properties": {"instance": {"type": "string"}}},
        "securityDefinitions": JSON_OBJECT,
        "security": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "properties": JSON_OBJECT,
        "actions": JSON_OBJECT,
        "events": JSON_OBJECT,
        "links": {"type": "array", "items": JSON_OBJECT},
        "forms": {"type": "array", "items": JSON_OBJECT},
        "registration": {
            "type": "object",
            "description": "Registration information; only ttl is read from a registration, the rest is set here",
            "properties": {"ttl": {"type": "number", "exclusiveMinimum": 0}},
        },
    },
    "additionalProperties": True,
}
ENRICHED_THING_DESCRIPTION: Schema = {
    "allOf": [
        ref("ThingDescription"),
        {
            "type": "object",
            "required": ["id", "registration"],
            "properties": {
                "registration": {
                    "type": "object",
                    "description": "Registration information (WoT Discovery §6.2) added by the directory",
                    "properties": {
                        "created": {"type": "string", "format": "date-time"},
                        "modified": {"type": "string", "format": "date-time"},
                        "expires": {"type": "string", "format": "date-time"},
                        "ttl": {"type": "number"},
                        "retrieved": {"type": "string", "format": "date-time"},
                    },
                }
            },
        },
    ]
}
MERGE_PATCH: Schema = {
    "type": "object",
    "description": "A JSON Merge Patch (RFC 7396) of the description: null removes a member",
    "additionalProperties": True,
}
ETAG = "The entity tag of the stored description, for If-Match"
NOTICES = "JSON array of notices (lint warnings, unknown contexts) that did not refuse the registration"
IF_MATCH = Param(
    "If-Match", "Only if the stored description still has this entity tag (optimistic concurrency)", location="header"
)

#: Problems any operation can answer, and when.
COMMON_PROBLEMS = {
    400: "A query parameter is unknown or invalid (invalidParams names it)",
    503: "The database or the SPARQL worker is unavailable; retry after Retry-After seconds",
}
PATH_ID_PROBLEM = "Nothing is registered under this id"
#: Problems of every operation that is not public (``opt={"access": "public"}``), once authentication or a
#: limit is on (registry/http/access.py).
GUARDED_PROBLEMS = {
    401: "Credentials are needed (authentication is on) or the ones given are not valid",
    403: "The credentials do not grant the scope this operation needs, or the description belongs to another owner",
    429: "The caller's request limit is reached; retry after Retry-After seconds",
}
BODY_PROBLEMS = {
    400: "The body is not what this operation accepts (validationErrors and invalidParams say why)",
    413: "The body is larger than REGISTRY_MAX_BODY_BYTES",
    415: "The body's Content-Type is not one this operation accepts",
}


def _problem_response(description: str, media_type: str) -> Schema:
    return {"description": description, "content": {media_type: {"schema": ref("Problem")}}}


def _response(answer: Answer) -> Schema:
    response: Schema = {"description": answer.description}
    if answer.content:
        response["content"] = {media: {"schema": schema} for media, schema in answer.content.items()}
        if answer.example is not None:
            for media in response["content"].values():
                media["example"] = answer.example
    if answer.headers:
        response["headers"] = {
            name: {"description": text, "schema": {"type": "string"}} for name, text in answer.headers.items()
        }
    return response


def _complete(operation: Schema, contract: Contract, path: str, public: bool) -> None:
    responses: Schema = operation.setdefault("responses", {})
    if contract.answers:
        _replace_answers(responses, contract.answers)
    for inferred in [key for key in responses if key >= "400"]:
        del responses[inferred]  # the framework's {status_code, detail, extra}: never sent
    if contract.body is not None:
        operation["requestBody"] = _request_body(contract.body)
    _add_parameters(operation, contract.parameters)
    for status, when in sorted(_problems(operation, contract, path, public).items()):
        responses[str(status)] = _problem_response(f"{HTTPStatus(status).phrase}: {when}", contract.problem_media_type)


def _replace_answers(responses: Schema, answers: Mapping[int, Answer]) -> None:
    """The contract's answers in place of the successes the framework inferred."""
    for inferred in [key for key in responses if key < "400"]:
        del responses[inferred]
    for status, answer in answers.items():
        responses[str(status)] = _response(answer)


def _request_body(body: Body) -> Schema:
    return {
        "required": True,
        "description": body.description,
        "content": {
            media: {
                "schema": schema,
                **(
                    {"examples": {name: {"value": value} for name, value in body.examples.items()}}
                    if body.examples and "json" in media
                    else {}
                ),
            }
            for media, schema in body.content.items()
        },
    }


def _add_parameters(operation: Schema, parameters: Sequence[Param]) -> None:
    """Adds the contract's parameters the inferred operation lacks."""
    present = {(parameter["name"], parameter["in"]) for parameter in operation.get("parameters", [])}
    for param in parameters:
        if (param.name, param.location) not in present:
            operation.setdefault("parameters", []).append(
                {
                    "name": param.name,
                    "in": param.location,
                    "required": param.required,
                    "description": param.description,
                    "schema": param.schema,
                }
            )


def _problems(operation: Schema, contract: Contract, path: str, public: bool) -> dict[int, str]:
    """The problem responses of an operation: the common ones that apply to it, then its own."""
    problems: dict[int, str] = {}
    if contract.common_problems:
        problems.update(COMMON_PROBLEMS)
        if "{" in path:
            problems[404] = PATH_ID_PROBLEM
        if "requestBody" in operation:
            problems.update(BODY_PROBLEMS)
        if not public:
            problems.update(GUARDED_PROBLEMS)
    problems.update(contract.problems)
    return problems


def _wire_schemas() -> dict[str, Schema]:
    """Schemas of the wire types that handlers declare in their contracts rather than return typed: the problem,
    and the notices of a write (with the notice, when no typed handler brought it already)."""
    _, components = msgspec.json.schema_components([Problem, WriteNotices], ref_template=COMPONENTS + "{name}")
    problem = components["Problem"]
    problem["additionalProperties"] = True  # extension members, e.g. line and column of a query syntax error
    return components


def complete_document(app: Litestar, inferred: Mapping[str, Any]) -> dict[str, Any]:
    """The served document: Litestar's, completed by every handler's contract."""
    document = copy.deepcopy(dict(inferred))
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    wire = _wire_schemas()
    schemas.update(Problem=wire.pop("Problem"), WriteNotices=wire.pop("WriteNotices"))
    for name, schema in wire.items():
        schemas.setdefault(name, schema)
    schemas["ThingDescription"] = THING_DESCRIPTION
    schemas["EnrichedThingDescription"] = ENRICHED_THING_DESCRIPTION
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        path = route.path_format or "/"
        item = document.get("paths", {}).get(path)
        if item is None:
            continue
        for method, (handler, _) in route.route_handler_map.items():
            operation = item.get(str(method).lower())
            if operation is None or not handler.resolve_include_in_schema():
                continue
            contract = handler.opt.get(CONTRACT, Contract())
            _complete(operation, contract, path, public=handler.opt.get("access") == "public")
    return document


class ContractDocument:
    """The completed document, computed once from the one Litestar builds (which it caches too)."""

    def __init__(self) -> None:
        self._inferred: Mapping[str, Any] | None = None
        self._served: dict[str, Any] = {}

    def of(self, request: Request[Any, Any, Any], inferred: Mapping[str, Any]) -> dict[str, Any]:
        if inferred is not self._inferred:
            self._served = complete_document(request.app, inferred)
            self._inferred = inferred
        return self._served


class ContractJson(JsonRenderPlugin):
    """``/schema/openapi.json``: the completed document."""

    def __init__(self, contract: ContractDocument) -> None:
        super().__init__()
        self.contract = contract

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return self.render_json(request, self.contract.of(request, openapi_schema))


def seed_example(name: str) -> Any:
    """An LMOS seed description shipped with the package (``registry/http/examples``), for examples."""
    return json.loads(resources.files("registry.http").joinpath("examples", name).read_text(encoding="utf-8"))


__all__ = [
    "CONTRACT",
    "ENRICHED_THING_DESCRIPTION",
    "IF_MATCH",
    "JSON_OBJECT",
    "MERGE_PATCH",
    "PROBLEM_JSON",
    "Answer",
    "Body",
    "Contract",
    "ContractDocument",
    "ContractJson",
    "Param",
    "documented",
    "imported_answers",
    "ref",
    "seed_example",
]
