"""LLM tool formats ↔ ``lmos:Tool`` Thing Descriptions (exports checked against the formats' published schemas).

A tool function becomes one TD action: name = action key (and the TD title), description, input schema, and, where
the format has them, output schema (MCP ``outputSchema``), MCP ``annotations`` and the Allos ``permission``
(kept as ``lmos:annotations`` / ``lmos:permission`` on the action so they survive a round trip). Name, description
and input schema survive every format's round trip unchanged. Formats:

- ``openai``: a Chat Completions tool ``{"type": "function", "function": {name, description, parameters}}``;
  import also takes the bare function object and the Responses API's flat ``{"type": "function", name, …}``.
- ``anthropic``: ``{name, description, input_schema}``.
- ``mcp``: ``{name, title?, description, inputSchema, outputSchema?, annotations?}``.
- ``lmkit``: ``ITool`` as JSON ``{Name, Description, InputSchema}``; ``InputSchema`` is a JSON string (as the C#
  property is); import also takes an object.
- ``mojentic``: the descriptor ``{type: "function", function: {name, description, parameters}}``.
- ``allos``: ``BaseTool`` ``{name, description, parameters: [ToolParameter{name, type, description, required}],
  permission}``; export turns the top-level input properties into parameters (nested schema detail is lost there).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from importlib import resources
from typing import Any, TypeVar

import jsonschema_rs
import msgspec

from registry.descriptions.model import LMOS_NAMESPACE, TD11_CONTEXT, lmos_member

FORMATS = ("openai", "anthropic", "mcp", "lmkit", "mojentic", "allos")

#: The members each format's tool may have (OpenAI: the Chat Completions wrapper, the bare function and the
#: Responses API's flat tool). A member outside these is refused, so a file is never read under another format's
#: name with its schema silently dropped. Mojentic's descriptor *is* OpenAI's: the two accept each other's files.
_FUNCTION_MEMBERS = frozenset({"name", "description", "parameters", "strict"})
_MEMBERS: dict[str, tuple[frozenset[str], ...]] = {
    "openai": (frozenset({"type", "function"}), _FUNCTION_MEMBERS, _FUNCTION_MEMBERS | {"type"}),
    "mojentic": (frozenset({"type", "function"}),),
    "anthropic": (frozenset({"name", "description", "input_schema", "cache_control", "type"}),),
    "mcp": (
        frozenset({"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta", "icons"}),
    ),
    "lmkit": (frozenset({"Name", "Description", "InputSchema"}),),
    "allos": (frozenset({"name", "description", "parameters", "permission"}),),
}
#: Published schemas exports are validated against (json_schemas/tool_formats; json_schemas/SOURCES.txt names them).
_PUBLISHED_SCHEMAS = {
    "openai": "openai-chat-completion-tool.schema.json",
    "mojentic": "openai-chat-completion-tool.schema.json",
    "anthropic": "anthropic-tool.schema.json",
    "mcp": "mcp-2025-06-18-tool.schema.json",
}
ALLOS_PERMISSIONS = ("always_allow", "always_deny", "ask_user")


class ToolFormatError(ValueError):
    """The body is not a tool in the named format; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class ToolFunction(msgspec.Struct, frozen=True, omit_defaults=True):
    name: str
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    permission: str | None = None
    strict: bool | None = None


def _object(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ToolFormatError(field, f"{field} must be a JSON object")
    return value


def _string(value: Any, field: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise ToolFormatError(field, f"{field} must be a {'non-empty ' if required else ''}string")
    return value


def _schema(value: Any, field: str, *, required: bool = False) -> dict[str, Any] | None:
    if value is None and not required:
        return None
    return _object(value, field)


# -- import


def _from_function(function: dict[str, Any], prefix: str) -> ToolFunction:
    strict = function.get("strict")
    return ToolFunction(
        name=str(_string(function.get("name"), f"{prefix}name")),
        description=_string(function.get("description"), f"{prefix}description", required=False),
        input_schema=_schema(function.get("parameters"), f"{prefix}parameters"),
        strict=strict if isinstance(strict, bool) else None,
    )


def _import_openai(body: dict[str, Any]) -> ToolFunction:
    if "function" in body:
        if body.get("type", "function") != "function":
            raise ToolFormatError("type", "only tools of type 'function' can be imported")
        return _from_function(_object(body["function"], "function"), "function.")
    return _from_function(body, "")


def _import_mojentic(body: dict[str, Any]) -> ToolFunction:
    if body.get("type") != "function":
        raise ToolFormatError("type", "a Mojentic descriptor has type 'function'")
    return _from_function(_object(body.get("function"), "function"), "function.")


def _import_anthropic(body: dict[str, Any]) -> ToolFunction:
    return ToolFunction(
        name=str(_string(body.get("name"), "name")),
        description=_string(body.get("description"), "description", required=False),
        input_schema=_schema(body.get("input_schema"), "input_schema", required=True),
    )


def _import_mcp(body: dict[str, Any]) -> ToolFunction:
    annotations = body.get("annotations")
    return ToolFunction(
        name=str(_string(body.get("name"), "name")),
        title=_string(body.get("title"), "title", required=False),
        description=_string(body.get("description"), "description", required=False),
        input_schema=_schema(body.get("inputSchema"), "inputSchema", required=True),
        output_schema=_schema(body.get("outputSchema"), "outputSchema"),
        annotations=_schema(annotations, "annotations"),
    )


def _import_lmkit(body: dict[str, Any]) -> ToolFunction:
    raw_schema = body.get("InputSchema")
    if isinstance(raw_schema, str):
        try:
            raw_schema = msgspec.json.decode(raw_schema)
        except msgspec.DecodeError as error:
            raise ToolFormatError("InputSchema", f"InputSchema is not valid JSON: {error}") from error
    return ToolFunction(
        name=str(_string(body.get("Name"), "Name")),
        description=_string(body.get("Description"), "Description", required=False),
        input_schema=_schema(raw_schema, "InputSchema", required=True),
    )


def _import_allos(body: dict[str, Any]) -> ToolFunction:
    parameters = body.get("parameters", [])
    if not isinstance(parameters, list):
        raise ToolFormatError("parameters", "parameters must be a list of ToolParameter objects")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for index, parameter in enumerate(parameters):
        field = f"parameters[{index}]"
        parameter = _object(parameter, field)
        name = str(_string(parameter.get("name"), f"{field}.name"))
        schema: dict[str, Any] = {"type": _string(parameter.get("type"), f"{field}.type")}
        description = _string(parameter.get("description"), f"{field}.description", required=False)
        if description is not None:
            schema["description"] = description
        properties[name] = schema
        is_required = parameter.get("required", False)
        if not isinstance(is_required, bool):
            raise ToolFormatError(f"{field}.required", "required must be true or false")
        if is_required:
            required.append(name)
    permission = _string(body.get("permission"), "permission", required=False)
    if permission is not None and permission.lower() not in ALLOS_PERMISSIONS:
        raise ToolFormatError("permission", f"permission must be one of {', '.join(ALLOS_PERMISSIONS)}")
    return ToolFunction(
        name=str(_string(body.get("name"), "name")),
        description=_string(body.get("description"), "description", required=False),
        input_schema={"type": "object", "properties": properties, "required": required},
        permission=permission.lower() if permission else None,
    )


_IMPORTERS: dict[str, Callable[[dict[str, Any]], ToolFunction]] = {
    "openai": _import_openai,
    "anthropic": _import_anthropic,
    "mcp": _import_mcp,
    "lmkit": _import_lmkit,
    "mojentic": _import_mojentic,
    "allos": _import_allos,
}


def _is_mcp(body: dict[str, Any]) -> bool:
    return "inputSchema" in body or "outputSchema" in body


def _is_anthropic(body: dict[str, Any]) -> bool:
    return "input_schema" in body


def _is_lmkit(body: dict[str, Any]) -> bool:
    return "Name" in body or "InputSchema" in body


def _is_allos(body: dict[str, Any]) -> bool:
    return isinstance(body.get("parameters"), list) or "permission" in body


def _is_openai(body: dict[str, Any]) -> bool:
    """A wrapped function, or a bare or flat one (a name and the function's members only)."""
    return isinstance(body.get("function"), dict) or (
        isinstance(body.get("name"), str) and set(body) <= _MEMBERS["openai"][2]
    )


#: The members that give a tool's format away, asked in this order: the first format whose members a body has is
#: its format.
_FORMAT_SIGNS: tuple[tuple[str, Callable[[dict[str, Any]], bool]], ...] = (
    ("mcp", _is_mcp),
    ("anthropic", _is_anthropic),
    ("lmkit", _is_lmkit),
    ("allos", _is_allos),
    ("openai", _is_openai),
)


def detect_format(body: Any) -> str | None:
    """The format a tool's members say it is in (OpenAI for the descriptor OpenAI and Mojentic share)."""
    if not isinstance(body, dict):
        return None
    return next((tool_format for tool_format, is_format in _FORMAT_SIGNS if is_format(body)), None)


def _check_members(tool_format: str, body: dict[str, Any]) -> None:
    shapes = _MEMBERS[tool_format]
    if any(set(body) <= shape for shape in shapes):
        wrapped = body.get("function")
        if not isinstance(wrapped, dict) or "type" not in body:
            return
        unknown = sorted(set(wrapped) - (_FUNCTION_MEMBERS - ({"strict"} if tool_format == "mojentic" else set())))
        if not unknown:
            return
        field = f"function.{unknown[0]}"
    else:
        unknown = sorted(set(body) - set().union(*shapes))
        field = unknown[0]
    guess = detect_format(body)
    hint = f"; it looks like a {guess} tool (format={guess})" if guess not in (None, tool_format) else ""
    raise ToolFormatError(field, f"a {tool_format} tool has no member {', '.join(map(repr, unknown))}{hint}")


def import_tool(tool_format: str, body: Any) -> ToolFunction:
    """The function of a tool in ``tool_format``; a member that format does not have is refused."""
    if tool_format not in _IMPORTERS:
        raise ToolFormatError("format", f"unknown tool format {tool_format!r}; use one of {', '.join(FORMATS)}")
    body = _object(body, "(body)")
    _check_members(tool_format, body)
    return _IMPORTERS[tool_format](body)


#: TD action members ↔ the MCP annotation hints that say the same.
_HINTS = (("safe", "readOnlyHint"), ("idempotent", "idempotentHint"))


def tool_description(
    function: ToolFunction, thing_id: str, *, vendor: str | None = None, version: str | None = None, href: str | None
) -> dict[str, Any]:
    """The ``lmos:Tool`` TD of ``function``. Without ``href`` the form names the tool (no endpoint is known)."""
    document: dict[str, Any] = {
        "@context": [TD11_CONTEXT, {"lmos": LMOS_NAMESPACE}],
        "@type": "lmos:Tool",
        "id": thing_id,
        "title": function.name,
    }
    if function.description is not None:
        document["description"] = function.description
    if version is not None:
        document["version"] = {"instance": version}
    if vendor is not None:
        document["lmos:metadata"] = {"lmos:vendor": {"lmos:name": vendor}}
    document["securityDefinitions"] = {"nosec_sc": {"scheme": "nosec"}}
    document["security"] = "nosec_sc"
    document["actions"] = {function.name: _tool_action(function, href)}
    return document


def _tool_action(function: ToolFunction, href: str | None) -> dict[str, Any]:
    """The TD action of ``function``: its members that are set, in the order a TD lists them, and one form."""
    action = _present(
        {
            "title": function.title,
            "description": function.description,
            "input": function.input_schema,
            "output": function.output_schema,
            "lmos:annotations": function.annotations,
        }
    )
    action.update(_hinted_members(function.annotations))
    action.update(_present({"lmos:permission": function.permission, "lmos:strict": function.strict}))
    action["forms"] = [{"href": href or f"urn:lmos:tool:{function.name}", "op": "invokeaction"}]
    return action


def _present(members: dict[str, Any]) -> dict[str, Any]:
    """The members that have a value (not None)."""
    return {key: value for key, value in members.items() if value is not None}


def _hinted_members(annotations: dict[str, Any] | None) -> dict[str, bool]:
    """``safe`` and ``idempotent`` as the MCP annotations' boolean hints say."""
    if annotations is None:
        return {}
    return {member: annotations[hint] for member, hint in _HINTS if isinstance(annotations.get(hint), bool)}


# -- export


def tool_functions(document: dict[str, Any]) -> list[ToolFunction]:
    """Every action of a description as a tool function."""
    actions = document.get("actions")
    return [
        _tool_function(name, action)
        for name, action in (actions if isinstance(actions, dict) else {}).items()
        if isinstance(action, dict)
    ]


_T = TypeVar("_T")


def _typed(value: Any, kind: type[_T]) -> _T | None:
    """``value`` if it is a ``kind``, else None (a member of another type is left out)."""
    return value if isinstance(value, kind) else None


def _tool_function(name: str, action: dict[str, Any]) -> ToolFunction:
    return ToolFunction(
        name=name,
        title=_typed(action.get("title"), str),
        description=_typed(action.get("description"), str),
        input_schema=_typed(action.get("input"), dict),
        output_schema=_typed(action.get("output"), dict),
        annotations=_annotations(action),
        permission=_typed(lmos_member(action, "permission")[1], str),
        strict=_typed(lmos_member(action, "strict")[1], bool),
    )


def _annotations(action: dict[str, Any]) -> dict[str, Any] | None:
    """The MCP annotations of an action: as kept (``lmos:annotations``), else the hints its ``safe`` and
    ``idempotent`` give; None without either."""
    annotations = lmos_member(action, "annotations")[1]
    if isinstance(annotations, dict):
        return annotations
    derived = {hint: action[member] for member, hint in _HINTS if isinstance(action.get(member), bool)}
    return derived or None


#: The schema of a tool without input, for formats that require one.
EMPTY_INPUT: dict[str, Any] = {"type": "object", "properties": {}}


def object_schema(schema: dict[str, Any] | None, member: str) -> dict[str, Any]:
    """``schema`` as the object schema tool formats require: an object schema as it is (``type: object`` added
    when only implied), anything else as the one required member ``member`` of an object (MCP's convention for
    structured results that are not objects: ``{"result": …}``)."""
    if schema is None:
        return EMPTY_INPUT
    if schema.get("type") == "object":
        return schema
    if "type" not in schema and ("properties" in schema or not schema):
        return {"type": "object", **schema}
    return {"type": "object", "properties": {member: schema}, "required": [member]}


def _function_object(function: ToolFunction) -> dict[str, Any]:
    result: dict[str, Any] = {"name": function.name, "description": function.description or ""}
    result["parameters"] = object_schema(function.input_schema, "input")
    if function.strict is not None:
        result["strict"] = function.strict
    return result


def _export_mcp(function: ToolFunction) -> dict[str, Any]:
    result: dict[str, Any] = {"name": function.name}
    if function.title is not None:
        result["title"] = function.title
    result["description"] = function.description or ""
    result["inputSchema"] = object_schema(function.input_schema, "input")
    if function.output_schema is not None:
        result["outputSchema"] = object_schema(function.output_schema, "result")
    if function.annotations is not None:
        result["annotations"] = function.annotations
    return result


def _allos_parameters(schema: dict[str, Any] | None) -> list[dict[str, Any]]:
    schema = schema or {}
    properties: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    parameters = []
    for name, property_schema in properties.items():
        property_schema = property_schema if isinstance(property_schema, dict) else {}
        declared = property_schema.get("type")
        parameters.append(
            {
                "name": name,
                "type": declared if isinstance(declared, str) else "object",
                "description": property_schema.get("description", ""),
                "required": name in required,
            }
        )
    return parameters


_EXPORTERS: dict[str, Callable[[ToolFunction], dict[str, Any]]] = {
    "openai": lambda function: {"type": "function", "function": _function_object(function)},
    "mojentic": lambda function: {"type": "function", "function": _function_object(function)},
    "anthropic": lambda function: {
        "name": function.name,
        "description": function.description or "",
        "input_schema": object_schema(function.input_schema, "input"),
    },
    "mcp": _export_mcp,
    "lmkit": lambda function: {
        "Name": function.name,
        "Description": function.description or "",
        "InputSchema": msgspec.json.encode(object_schema(function.input_schema, "input")).decode(),
    },
    "allos": lambda function: {
        "name": function.name,
        "description": function.description or "",
        "parameters": _allos_parameters(function.input_schema),
        "permission": function.permission or "ask_user",
    },
}


@functools.cache
def published_schema(tool_format: str) -> jsonschema_rs.Draft7Validator | None:
    """The validator of a format's published tool schema; None for formats that publish none (LMKit, Allos)."""
    name = _PUBLISHED_SCHEMAS.get(tool_format)
    if name is None:
        return None
    text = resources.files("registry.descriptions").joinpath("json_schemas", "tool_formats", name).read_text("utf-8")
    return jsonschema_rs.Draft7Validator(json.loads(text))


def export_tool(tool_format: str, function: ToolFunction) -> dict[str, Any]:
    """The tool in ``tool_format``, checked against that format's published schema."""
    if tool_format not in _EXPORTERS:
        raise ToolFormatError("format", f"unknown tool format {tool_format!r}; use one of {', '.join(FORMATS)}")
    exported = _EXPORTERS[tool_format](function)
    validator = published_schema(tool_format)
    error = None if validator is None else next(iter(validator.iter_errors(exported)), None)
    if error is not None:
        where = "/".join(str(part) for part in error.instance_path) or "(root)"
        raise ToolFormatError(
            "format", f"{function.name} cannot be given as a {tool_format} tool: {where}: {error.message}"
        )
    return exported
