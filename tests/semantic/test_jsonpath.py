"""JSONPath over the directory: streamed one description at a time when that gives the same nodes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import jsonpath_rfc9535
import msgspec
import pytest

from registry.errors import BadRequest
from registry.semantic.jsonpath import compile_query, per_description, search
from tests.conftest import REAL_TDS

TEXTS = [path.read_text() for path in sorted(REAL_TDS.glob("*.json"))]


async def stream() -> AsyncIterator[str]:
    for text in TEXTS:
        yield text


@pytest.mark.parametrize(
    ("expression", "streamed"),
    [
        ("$[*].title", True),
        ("$[?@.title == 'Counter'].id", True),
        ("$[?@.actions].actions.*.forms[0].href", True),
        ("$[?length(@.properties) > 3].title", True),
        ("$..scheme", False),
        ("$[0].title", False),
        ("$[-1:]", False),
        ("$[?@.id == $[0].id].title", False),
    ],
)
async def test_same_nodes_as_on_the_whole_array(expression: str, streamed: bool) -> None:
    assert per_description(compile_query(expression), expression) is streamed
    expected = [node.value for node in jsonpath_rfc9535.find(expression, [json.loads(text) for text in TEXTS])]
    assert msgspec.json.decode(await search(expression, stream())) == expected
    assert expected or expression == "$[?@.title == 'Counter'].id"


def test_invalid_expression_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        compile_query("$[?")
