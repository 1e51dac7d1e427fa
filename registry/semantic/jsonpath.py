"""JSONPath (RFC 9535) search: the query is applied to the JSON array of all stored descriptions.

Queries that start by selecting array elements with ``[*]`` or filters (``$[?@.title == 'x']``), and do not
refer to the root again, give the same nodes applied to each description alone, so they are evaluated one
description at a time, streamed from the database, without ever holding the whole directory in memory. Others
(indexes, slices, descendants of the root) need the array itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import jsonpath_rfc9535
import msgspec
from jsonpath_rfc9535.segments import JSONPathChildSegment
from jsonpath_rfc9535.selectors import FilterSelector, WildcardSelector

from registry.errors import BadRequest

BATCH = 500


def compile_query(expression: str) -> jsonpath_rfc9535.JSONPathQuery:
    try:
        return jsonpath_rfc9535.compile(expression)
    except jsonpath_rfc9535.JSONPathError as error:
        raise BadRequest(
            f"The JSONPath expression is not valid: {error}",
            invalidParams=[{"name": "query", "reason": str(error)}],
        ) from error


def per_description(query: jsonpath_rfc9535.JSONPathQuery, expression: str) -> bool:
    segments = query.segments
    return (
        bool(segments)
        and isinstance(segments[0], JSONPathChildSegment)
        and all(isinstance(selector, WildcardSelector | FilterSelector) for selector in segments[0].selectors)
        and expression.count("$") == 1
    )


async def search(expression: str, documents: AsyncIterator[str]) -> bytes:
    """The JSON array of the values of the matched nodes."""
    query = compile_query(expression)
    one_by_one = per_description(query, expression)

    def evaluate(texts: list[str]) -> list[Any]:
        values = [msgspec.json.decode(text) for text in texts]
        try:
            if one_by_one:
                return [node.value for value in values for node in query.find([value])]
            return [node.value for node in query.find(values)]
        except jsonpath_rfc9535.JSONPathError as error:
            raise BadRequest(f"The JSONPath expression cannot be evaluated: {error}") from error

    found: list[Any] = []
    batch: list[str] = []
    async for text in documents:
        batch.append(text)
        if one_by_one and len(batch) >= BATCH:
            found.extend(await asyncio.to_thread(evaluate, batch))
            batch = []
    found.extend(await asyncio.to_thread(evaluate, batch))
    return msgspec.json.encode(found)
