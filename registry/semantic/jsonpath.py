"""JSONPath (RFC 9535) search: the query is applied to the JSON array of all stored descriptions.

Queries that start by selecting array elements with ``[*]`` or filters (``$[?@.title == 'x']``), and do not
refer to the root again, give the same nodes applied to each description alone, so they are evaluated one
description at a time, streamed from the database, without ever holding the whole directory in memory. Others
(indexes, slices, descendants of the root) need the array itself.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import AsyncIterator, Iterable

import jsonpath_rfc9535
import msgspec
from jsonpath_rfc9535.segments import JSONPathChildSegment
from jsonpath_rfc9535.selectors import FilterSelector, WildcardSelector

from registry.errors import BadRequest

BATCH = 500
#: Deepest document registration accepts by default (REGISTRY_MAX_JSON_DEPTH).
DEFAULT_MAX_DEPTH = 128
#: Nodes visited between two looks at the clock.
CLOCK_EVERY = 1000


@dataclasses.dataclass(frozen=True, slots=True)
class JsonPathLimits:
    """Bounds of one query: ``timeout`` seconds, ``max_results`` values, ``max_bytes`` of answer, and documents
    as deep as registration accepts (``max_depth``), so that no stored document breaks a descendant query."""

    timeout: float = 10.0
    max_results: int = 10_000
    max_bytes: int = 16 * 1024 * 1024
    max_depth: int = DEFAULT_MAX_DEPTH


class _Environment(jsonpath_rfc9535.JSONPathEnvironment):
    def __init__(self, max_depth: int) -> None:
        super().__init__()
        # The directory's array and the description add two levels to the deepest document accepted.
        self.max_recursion_depth = max_depth + 2


@functools.cache
def _environment(max_depth: int) -> _Environment:
    return _Environment(max_depth)


def compile_query(expression: str, max_depth: int = DEFAULT_MAX_DEPTH) -> jsonpath_rfc9535.JSONPathQuery:
    try:
        return _environment(max_depth).compile(expression)
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


class _Answer:
    """The encoded values found so far, refusing to grow past the limits or to run past the deadline."""

    def __init__(self, limits: JsonPathLimits) -> None:
        self.limits = limits
        self.deadline = time.monotonic() + limits.timeout
        self.values: list[bytes] = []
        self.size = 2
        self.visited = 0

    def add(self, nodes: Iterable[jsonpath_rfc9535.JSONPathNode]) -> None:
        for node in nodes:
            self.tick()
            encoded = msgspec.json.encode(node.value)
            self.size += len(encoded) + 1
            self.values.append(encoded)
            if len(self.values) > self.limits.max_results:
                raise BadRequest(
                    f"The JSONPath query selects more than {self.limits.max_results} values "
                    "(REGISTRY_JSONPATH_MAX_RESULTS); narrow it"
                )
            if self.size > self.limits.max_bytes:
                raise BadRequest(
                    f"The answer of the JSONPath query exceeds {self.limits.max_bytes} bytes "
                    "(REGISTRY_JSONPATH_MAX_BYTES); narrow it"
                )

    def tick(self) -> None:
        self.visited += 1
        if self.visited % CLOCK_EVERY == 0 and time.monotonic() > self.deadline:
            raise BadRequest(
                f"The JSONPath query did not finish within {self.limits.timeout:g} s (REGISTRY_JSONPATH_TIMEOUT); "
                "narrow it"
            )

    def encoded(self) -> bytes:
        return b"[" + b",".join(self.values) + b"]"


async def search(expression: str, documents: AsyncIterator[str], limits: JsonPathLimits | None = None) -> bytes:
    """The JSON array of the values of the matched nodes, within ``limits`` (a 400 names the limit reached)."""
    limits = limits or JsonPathLimits()
    query = compile_query(expression, limits.max_depth)
    one_by_one = per_description(query, expression)
    answer = _Answer(limits)

    def evaluate(texts: list[str]) -> None:
        values = [msgspec.json.decode(text) for text in texts]
        try:
            if one_by_one:
                for value in values:
                    answer.add(query.finditer([value]))
            else:
                answer.add(query.finditer(values))
        except jsonpath_rfc9535.JSONPathError as error:
            raise BadRequest(f"The JSONPath expression cannot be evaluated: {error}") from error

    batch: list[str] = []
    async for text in documents:
        batch.append(text)
        if one_by_one and len(batch) >= BATCH:
            await asyncio.to_thread(evaluate, batch)
            batch = []
        answer.tick()
    await asyncio.to_thread(evaluate, batch)
    return answer.encoded()
