"""JSONPath over the directory: streamed one description at a time when that gives the same nodes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import jsonpath_rfc9535
import msgspec
import pytest

from registry.errors import BadRequest
from registry.semantic.jsonpath import JsonPathLimits, compile_query, search, streams
from tests.conftest import REAL_TDS

TEXTS = [path.read_text() for path in sorted(REAL_TDS.glob("*.json"))]


async def stream() -> AsyncIterator[str]:
    for text in TEXTS:
        yield text


async def count() -> int:
    return len(TEXTS)


@pytest.mark.parametrize(
    ("expression", "streamed"),
    [
        ("$[*].title", True),
        ("$[?@.title == 'Counter'].id", True),
        ("$[?@.actions].actions.*.forms[0].href", True),
        ("$[?length(@.properties) > 3].title", True),
        ("$..scheme", True),
        ("$..*", True),
        ("$..[*, 'title', 0]", True),
        ("$..[?@.href].href", True),
        ("$[0].title", True),
        ("$[-1:]", True),
        ("$[::-2].id", True),
        ("$[1, *, 0, ?@.title, -1, 'x'].title", True),
        ("$[100]", True),
        ("$", False),
        ("$[?@.id == $[0].id].title", False),
    ],
)
async def test_same_nodes_in_the_same_order_as_on_the_whole_array(expression: str, streamed: bool) -> None:
    assert streams(expression) is streamed
    expected = [node.value for node in jsonpath_rfc9535.find(expression, [json.loads(text) for text in TEXTS])]
    assert msgspec.json.decode(await search(expression, stream(), count)) == expected
    assert expected or expression in {"$[?@.title == 'Counter'].id", "$[100]"}


async def test_a_query_needing_the_whole_array_holds_at_most_max_bytes_of_descriptions() -> None:
    with pytest.raises(BadRequest, match="needs every description at once"):
        await search("$[?@.id == $[0].id].title", stream(), count, JsonPathLimits(max_bytes=10_000))


def test_invalid_expression_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        compile_query("$[?")


def _nested(depth: int) -> dict[str, object]:
    document: dict[str, object] = {"leaf": True}
    for _ in range(depth - 1):
        document = {"x": document}
    return document


async def test_documents_as_deep_as_registration_accepts_do_not_break_descendant_queries() -> None:
    deepest = msgspec.json.encode(_nested(JsonPathLimits().max_depth)).decode()

    async def documents() -> AsyncIterator[str]:
        yield deepest
        yield TEXTS[0]

    assert msgspec.json.decode(await search("$..leaf", documents(), count)) == [True]


@pytest.mark.parametrize(
    ("limits", "reached"),
    [
        (JsonPathLimits(max_results=50), "REGISTRY_JSONPATH_MAX_RESULTS"),
        (JsonPathLimits(max_bytes=10_000), "REGISTRY_JSONPATH_MAX_BYTES"),
        (JsonPathLimits(timeout=0.0), "REGISTRY_JSONPATH_TIMEOUT"),
    ],
)
async def test_explosive_queries_stop_at_their_limits(limits: JsonPathLimits, reached: str) -> None:
    with pytest.raises(BadRequest, match=reached):
        await search("$..*..*..*", stream(), count, limits)
