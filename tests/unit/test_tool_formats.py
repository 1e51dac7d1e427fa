"""Every tool format round-trips through an lmos:Tool description with name, description and schema unchanged."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from registry.descriptions.lint import lint
from registry.descriptions.summary import summarise
from registry.descriptions.tool_formats import (
    FORMATS,
    ToolFormatError,
    ToolFunction,
    detect_format,
    export_tool,
    import_tool,
    published_schema,
    tool_description,
    tool_functions,
)
from registry.descriptions.validation import validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "location": {"type": "string", "description": "City name or coordinates"},
        "units": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature units"},
    },
    "required": ["location"],
}
NAME, DESCRIPTION = "get_weather", "Get current weather conditions for a location"

#: One tool in each format, as the seeds show them.
SAMPLES: dict[str, dict[str, Any]] = {
    "openai": {"type": "function", "function": {"name": NAME, "description": DESCRIPTION, "parameters": SCHEMA}},
    "anthropic": {"name": NAME, "description": DESCRIPTION, "input_schema": SCHEMA},
    "mcp": {
        "name": NAME,
        "title": "Weather",
        "description": DESCRIPTION,
        "inputSchema": SCHEMA,
        "outputSchema": {"type": "object", "properties": {"temperature": {"type": "number"}}},
        "annotations": {"readOnlyHint": True, "openWorldHint": True},
    },
    "lmkit": {"Name": NAME, "Description": DESCRIPTION, "InputSchema": msgspec.json.encode(SCHEMA).decode()},
    "mojentic": {"type": "function", "function": {"name": NAME, "description": DESCRIPTION, "parameters": SCHEMA}},
    "allos": {
        "name": NAME,
        "description": DESCRIPTION,
        "parameters": [
            {"name": "location", "type": "string", "description": "City name or coordinates", "required": True},
            {"name": "units", "type": "string", "description": "Temperature units", "required": False},
        ],
        "permission": "always_allow",
    },
}


def through_description(tool_format: str, body: dict[str, Any]) -> dict[str, Any]:
    document = tool_description(
        import_tool(tool_format, body), "urn:test:tool", vendor="Acme", version="1.0.0", href=None
    )
    assert validate(document) == []
    assert summarise(document).kind == "tool"
    (function,) = tool_functions(document)
    return export_tool(tool_format, function)


@pytest.mark.parametrize("tool_format", FORMATS)
def test_round_trip_is_exact(tool_format: str) -> None:
    assert through_description(tool_format, SAMPLES[tool_format]) == SAMPLES[tool_format]


@pytest.mark.parametrize("source", [name for name in FORMATS if name != "allos"])
@pytest.mark.parametrize("target", [name for name in FORMATS if name != "allos"])
def test_name_description_and_schema_survive_any_conversion(source: str, target: str) -> None:
    function = import_tool(target, through_description_to(source, target))
    assert (function.name, function.description, function.input_schema) == (NAME, DESCRIPTION, SCHEMA)


def through_description_to(source: str, target: str) -> dict[str, Any]:
    document = tool_description(import_tool(source, SAMPLES[source]), "urn:test:tool", href=None)
    (function,) = tool_functions(document)
    return export_tool(target, function)


def test_openai_variants_are_accepted() -> None:
    bare = {"name": NAME, "description": DESCRIPTION, "parameters": SCHEMA}
    responses_api = {"type": "function", **bare, "strict": True}
    assert import_tool("openai", bare).input_schema == SCHEMA
    assert import_tool("openai", responses_api).strict is True


def test_mcp_annotations_map_to_action_hints() -> None:
    document = tool_description(import_tool("mcp", SAMPLES["mcp"]), "urn:test:tool", href="https://tools.example/w")
    action = document["actions"][NAME]
    assert action["safe"] is True
    assert action["forms"] == [{"href": "https://tools.example/w", "op": "invokeaction"}]


@pytest.mark.parametrize(
    ("tool_format", "body", "field"),
    [
        ("openai", {"type": "function", "function": {"description": "x"}}, "function.name"),
        ("anthropic", {"name": "x"}, "input_schema"),
        ("mcp", {"name": "x", "inputSchema": []}, "inputSchema"),
        ("lmkit", {"Name": "x", "InputSchema": "{not json"}, "InputSchema"),
        ("mojentic", {"function": {"name": "x"}}, "type"),
        ("allos", {"name": "x", "parameters": [{"name": "a"}]}, "parameters[0].type"),
        ("allos", {"name": "x", "permission": "sometimes"}, "permission"),
        ("yaml", {}, "format"),
    ],
)
def test_malformed_tools_name_the_field(tool_format: str, body: dict[str, Any], field: str) -> None:
    with pytest.raises(ToolFormatError) as raised:
        import_tool(tool_format, body)
    assert raised.value.field == field


def test_lint_follows_lmkit_guidelines() -> None:
    document = tool_description(
        import_tool(
            "anthropic",
            {
                "name": "GetWeather",
                "description": "x" * 200,
                "input_schema": {"properties": {"city": {"type": "string"}}},
            },
        ),
        "urn:test:tool",
        href=None,
    )
    codes = {(warning.code, warning.field) for warning in lint(document, summarise(document))}
    assert codes == {
        ("name-not-snake-case", "/actions/GetWeather"),
        ("description-too-long", "/actions/GetWeather/description"),
        ("schema-type-missing", "/actions/GetWeather/input"),
        ("schema-required-missing", "/actions/GetWeather/input"),
        ("schema-description-missing", "/actions/GetWeather/input/properties/city"),
    }
    clean = tool_description(import_tool("anthropic", SAMPLES["anthropic"]), "urn:test:tool", href=None)
    assert lint(clean, summarise(clean)) == []


#: Mojentic's descriptor is OpenAI's Chat Completions tool: the two read each other's files (and only they do).
SAME_SHAPE = {("openai", "mojentic"), ("mojentic", "openai")}


@pytest.mark.parametrize("target", FORMATS)
@pytest.mark.parametrize("source", FORMATS)
def test_a_file_under_another_format_name_is_refused(source: str, target: str) -> None:
    if source == target or (source, target) in SAME_SHAPE:
        import_tool(target, SAMPLES[source])
        return
    with pytest.raises(ToolFormatError) as raised:
        import_tool(target, SAMPLES[source])
    assert target in str(raised.value)


def test_the_mismatch_names_the_format_the_file_is_in() -> None:
    with pytest.raises(ToolFormatError) as raised:
        import_tool("openai", SAMPLES["mcp"])
    assert raised.value.field in {"inputSchema", "outputSchema", "annotations", "title"}
    assert "it looks like a mcp tool (format=mcp)" in str(raised.value)


@pytest.mark.parametrize("tool_format", FORMATS)
def test_formats_are_detected(tool_format: str) -> None:
    assert detect_format(SAMPLES[tool_format]) == ("openai" if tool_format == "mojentic" else tool_format)


@pytest.mark.parametrize("tool_format", ["openai", "mojentic", "anthropic", "mcp"])
@pytest.mark.parametrize(
    ("input_schema", "output_schema"),
    [
        (SCHEMA, {"type": "string"}),
        (None, {"type": "array", "items": {"type": "number"}}),
        ({"type": "string"}, None),
        ({"properties": {"a": {"type": "string"}}}, {"type": "object"}),
    ],
)
def test_exports_validate_against_the_published_schemas(
    tool_format: str, input_schema: dict[str, Any] | None, output_schema: dict[str, Any] | None
) -> None:
    function = ToolFunction(name=NAME, description=DESCRIPTION, input_schema=input_schema, output_schema=output_schema)
    exported = export_tool(tool_format, function)
    validator = published_schema(tool_format)
    assert validator is not None
    assert list(validator.iter_errors(exported)) == []
    if tool_format == "mcp" and output_schema is not None and output_schema.get("type") != "object":
        assert exported["outputSchema"] == {
            "type": "object",
            "properties": {"result": output_schema},
            "required": ["result"],
        }


def test_the_published_schemas_refuse_what_the_formats_refuse() -> None:
    mcp, anthropic = published_schema("mcp"), published_schema("anthropic")
    assert mcp is not None
    assert anthropic is not None
    assert not mcp.is_valid({"name": NAME, "inputSchema": SCHEMA, "outputSchema": {"type": "string"}})
    assert not anthropic.is_valid({"name": NAME, "inputSchema": SCHEMA})
