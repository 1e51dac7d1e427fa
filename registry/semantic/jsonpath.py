"""JSONPath (RFC 9535) search: the query is applied to the JSON array of all stored descriptions.

The array is never built. A query's first segment applied to the array is split into one part per selector,
each followed by the rest of the query applied to one description at a time (the nodes and their order are those
of the whole array, as RFC 9535 and jsonpath-rfc9535 define them):

- ``[*]`` and filters (``$[?@.title == 'x']``) select descriptions in order; names select nothing in an array;
- indexes and slices (``$[0]``, ``$[-3:]``) select positions, computed from the number of descriptions;
- a descendant segment (``$..scheme``) is its selectors applied to the array, then the whole query applied to
  each description (the library's depth-first, pre-order walk).

Descriptions are read page by page and evaluated off the event loop as they come, so memory holds one page and
the answer (capped). Only queries that refer to the root again (``$`` inside a filter) need the array itself: they
may hold at most ``max_bytes`` of descriptions.

The deadline is kept inside the evaluation, not only between descriptions: one description with nested descendant
segments and filters can take minutes, and a thread cannot be stopped from outside. The evaluator is pure Python
and reads two settings of its environment in its loops, ``max_recursion_depth`` at every node a descendant segment
visits and ``nondeterministic`` in every descendant segment and every filter or wildcard applied to an object; the
directory's environment answers them from properties that look at the clock of the query the thread evaluates,
as does every description and every value found, and ``match()``/``search()`` run their regular expressions with
the time left. Between two looks at the clock the evaluator does at most about one pass over a description, so a
query stops shortly after its deadline and its thread is free again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import threading
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Iterator
from concurrent.futures import Executor
from typing import TypeVar

import jsonpath_rfc9535
import msgspec
import regex
from iregexp_check import check as is_iregexp
from jsonpath_rfc9535 import JSONPathNode, JSONPathQuery
from jsonpath_rfc9535.function_extensions import Match, Search
from jsonpath_rfc9535.function_extensions._pattern import map_re
from jsonpath_rfc9535.segments import JSONPathChildSegment, JSONPathRecursiveDescentSegment
from jsonpath_rfc9535.selectors import FilterSelector, IndexSelector, JSONPathSelector, SliceSelector, WildcardSelector

from registry.errors import BadRequest

#: Descriptions evaluated per hop to a thread.
BATCH = 500
#: Deepest document registration accepts by default (REGISTRY_MAX_JSON_DEPTH).
DEFAULT_MAX_DEPTH = 128
T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class JsonPathLimits:
    """Bounds of one query: ``timeout`` seconds, ``max_results`` values, ``max_bytes`` of answer (and of
    descriptions held by a query that needs the whole array), and documents as deep as registration accepts
    (``max_depth``), so that no stored document breaks a descendant query."""

    timeout: float = 10.0
    max_results: int = 10_000
    max_bytes: int = 16 * 1024 * 1024
    max_depth: int = DEFAULT_MAX_DEPTH


class _Clock:
    """The deadline of one query."""

    __slots__ = ("deadline", "timeout")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise self.expired()

    def expired(self) -> BadRequest:
        return BadRequest(
            f"The JSONPath query did not finish within {self.timeout:g} s (REGISTRY_JSONPATH_TIMEOUT); narrow it"
        )

    def remaining(self) -> float:
        return max(0.001, self.deadline - time.monotonic())


#: The clock of the query the current thread evaluates (None while it evaluates none).
_running = threading.local()


def _clock() -> _Clock | None:
    clock: _Clock | None = getattr(_running, "clock", None)
    return clock


def _look_at_the_clock() -> None:
    """A step of the evaluation on this thread: past its query's deadline, the query ends (400)."""
    clock = _clock()
    if clock is not None:
        clock.check()


@contextlib.contextmanager
def _timed(clock: _Clock) -> Iterator[None]:
    """Evaluate on this thread under ``clock``."""
    _running.clock = clock
    try:
        clock.check()
        yield
    finally:
        _running.clock = None


def _regex_timeout() -> float | None:
    clock = _clock()
    return None if clock is None else clock.remaining()


def _out_of_time(error: TimeoutError) -> BadRequest:
    """The query's timeout, for a regular expression that ran out of the time the query had left."""
    clock = _clock()
    if clock is None:  # no time limit was given to the expression: not one of ours
        raise error
    return clock.expired()


class _Match(Match):
    """``match()`` with the time the query has left for its regular expression (the ``regex`` module matches
    without looking at the query's clock)."""

    def __call__(self, string: str, pattern: object) -> bool:
        if not isinstance(pattern, str) or not is_iregexp(pattern):
            return False
        try:
            return bool(regex.fullmatch(map_re(pattern), string, timeout=_regex_timeout()))
        except (TypeError, regex.error):
            return False
        except TimeoutError as error:
            raise _out_of_time(error) from None


class _Search(Search):
    """``search()`` with the time the query has left for its regular expression."""

    def __call__(self, string: str, pattern: object) -> bool:
        if not isinstance(pattern, str) or not is_iregexp(pattern):
            return False
        try:
            return bool(regex.search(map_re(pattern), string, regex.VERSION1, timeout=_regex_timeout()))
        except (TypeError, regex.error):
            return False
        except TimeoutError as error:
            raise _out_of_time(error) from None


class _Environment(jsonpath_rfc9535.JSONPathEnvironment):
    def __init__(self, max_depth: int) -> None:
        # The directory's array and the description add two levels to the deepest document accepted.
        self._max_depth = max_depth + 2
        super().__init__()

    @property
    def max_recursion_depth(self) -> int:  # type: ignore[override]
        """Read by a descendant segment at every node it visits."""
        _look_at_the_clock()
        return self._max_depth

    @property
    def nondeterministic(self) -> bool:  # type: ignore[override]
        """Read by every descendant segment and by every filter or wildcard applied to an object."""
        _look_at_the_clock()
        return False

    def setup_function_extensions(self) -> None:
        super().setup_function_extensions()
        self.function_extensions["match"] = _Match()
        self.function_extensions["search"] = _Search()


@functools.cache
def _environment(max_depth: int) -> _Environment:
    return _Environment(max_depth)


def compile_query(expression: str, max_depth: int = DEFAULT_MAX_DEPTH) -> JSONPathQuery:
    try:
        return _environment(max_depth).compile(expression)
    except jsonpath_rfc9535.JSONPathError as error:
        raise BadRequest(
            f"The JSONPath expression is not valid: {error}",
            invalidParams=[{"name": "query", "reason": str(error)}],
        ) from error


@dataclasses.dataclass(frozen=True, slots=True)
class _Part:
    """One selector of the first segment applied to the array, then the rest of the query: ``query`` applied to
    a description at a selected position. ``by_position``: the selector picks positions (index, slice), so its
    values come in the order of its positions; otherwise in the order of the descriptions."""

    query: JSONPathQuery
    selector: JSONPathSelector
    by_position: bool


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    parts: tuple[_Part, ...]
    #: The whole query applied to each description (after the first segment's parts), for a descendant segment.
    each: JSONPathQuery | None


def _plan(query: JSONPathQuery, expression: str) -> _Plan | None:
    """How to evaluate ``query`` one description at a time, or None when it needs the whole array."""
    if not query.segments or expression.count("$") != 1:
        return None  # the array itself, or the root referred to again (inside a filter)
    first, *rest = query.segments
    env = query.env
    parts = []
    for selector in first.selectors:
        if isinstance(selector, WildcardSelector | FilterSelector):
            segment = JSONPathChildSegment(env=env, token=first.token, selectors=(selector,))
            parts.append(_Part(JSONPathQuery(env=env, segments=(segment, *rest)), selector, by_position=False))
        elif isinstance(selector, IndexSelector | SliceSelector):
            parts.append(_Part(JSONPathQuery(env=env, segments=tuple(rest)), selector, by_position=True))
        # a name selects nothing in an array
    each = query if isinstance(first, JSONPathRecursiveDescentSegment) else None
    return _Plan(tuple(parts), each)


def streams(expression: str) -> bool:
    """Whether the query is evaluated one description at a time (else it holds the whole array)."""
    return _plan(compile_query(expression), expression) is not None


class _Answer:
    """Counts the values found so far, refusing to grow past the limits or to run past the deadline."""

    def __init__(self, limits: JsonPathLimits) -> None:
        self.limits = limits
        self.clock = _Clock(limits.timeout)
        self.count = 0
        self.size = 2

    def encode(self, nodes: Iterable[JSONPathNode]) -> list[bytes]:
        values = []
        try:
            for node in nodes:
                _look_at_the_clock()
                encoded = msgspec.json.encode(node.value)
                self.count += 1
                self.size += len(encoded) + 1
                values.append(encoded)
                if self.count > self.limits.max_results:
                    raise BadRequest(
                        f"The JSONPath query selects more than {self.limits.max_results} values "
                        "(REGISTRY_JSONPATH_MAX_RESULTS); narrow it"
                    )
                if self.size > self.limits.max_bytes:
                    raise BadRequest(
                        f"The answer of the JSONPath query exceeds {self.limits.max_bytes} bytes "
                        "(REGISTRY_JSONPATH_MAX_BYTES); narrow it"
                    )
        except jsonpath_rfc9535.JSONPathError as error:
            raise BadRequest(f"The JSONPath expression cannot be evaluated: {error}") from error
        return values


class _Streamed:
    """A plan's values, kept apart per part (and for the descendant walk) until all descriptions are seen."""

    def __init__(self, plan: _Plan, answer: _Answer, count: int) -> None:
        self.plan = plan
        self.answer = answer
        self.position = 0
        #: Per part: the positions it selects, in its order (None: every description, in order).
        self.positions = [_positions(part.selector, count) if part.by_position else None for part in plan.parts]
        self.in_order: list[list[bytes]] = [[] for _ in plan.parts]
        self.at: list[dict[int, list[bytes]]] = [{} for _ in plan.parts]
        self.each: list[bytes] = []

    def evaluate(self, texts: list[str]) -> None:
        with _timed(self.answer.clock):
            for text in texts:
                self._evaluate(text)

    def _evaluate(self, text: str) -> None:
        self.answer.clock.check()  # a description may be large: each starts with a look at the clock
        document = msgspec.json.decode(text)
        for index, part in enumerate(self.plan.parts):
            positions = self.positions[index]
            if positions is None:
                self.in_order[index] += self.answer.encode(part.query.finditer([document]))
            elif self.position in positions and (values := self.answer.encode(part.query.finditer(document))):
                self.at[index][self.position] = values
        if self.plan.each is not None:
            self.each += self.answer.encode(self.plan.each.finditer(document))
        self.position += 1

    def values(self) -> Iterable[bytes]:
        for index, positions in enumerate(self.positions):
            if positions is None:
                yield from self.in_order[index]
            else:
                for position in positions:
                    yield from self.at[index].get(position, ())
        yield from self.each


def _positions(selector: JSONPathSelector, count: int) -> range:
    """The positions an index or slice selects in an array of ``count``, in its order: Python's slicing, as the
    library's (a range: constant memory, constant-time membership)."""
    everything = range(count)
    if isinstance(selector, SliceSelector):
        return everything[selector.slice] if selector.slice.step != 0 else range(0)
    assert isinstance(selector, IndexSelector)
    position = selector.index + count if selector.index < 0 else selector.index
    return range(position, position + 1) if 0 <= position < count else range(0)


async def search(
    expression: str,
    documents: AsyncIterable[str],
    count: Callable[[], Awaitable[int]],
    limits: JsonPathLimits | None = None,
    executor: Executor | None = None,
) -> bytes:
    """The JSON array of the values of the matched nodes, within ``limits`` (a 400 names the limit reached).
    ``count``: how many descriptions ``documents`` yields, asked only by queries selecting positions; ``executor``:
    the threads that evaluate (None: the event loop's default executor)."""
    limits = limits or JsonPathLimits()
    query = compile_query(expression, limits.max_depth)
    answer = _Answer(limits)
    plan = _plan(query, expression)
    loop = asyncio.get_running_loop()

    def off_the_loop(function: Callable[[], T]) -> Awaitable[T]:
        return loop.run_in_executor(executor, function)

    if plan is None:
        return await _whole(query, documents, answer, off_the_loop)
    streamed = _Streamed(plan, answer, await count() if any(part.by_position for part in plan.parts) else 0)
    batch: list[str] = []
    async for text in documents:
        batch.append(text)
        if len(batch) >= BATCH:
            await off_the_loop(functools.partial(streamed.evaluate, batch))
            batch = []
    await off_the_loop(functools.partial(streamed.evaluate, batch))
    return b"[" + b",".join(streamed.values()) + b"]"


async def _whole(
    query: JSONPathQuery,
    documents: AsyncIterable[str],
    answer: _Answer,
    off_the_loop: Callable[[Callable[[], bytes]], Awaitable[bytes]],
) -> bytes:
    """A query over the array itself: the descriptions held at once, at most ``max_bytes`` of them."""
    texts: list[str] = []
    held = 0
    async for text in documents:
        held += len(text)
        if held > answer.limits.max_bytes:
            raise BadRequest(
                "The JSONPath query refers to the root ($) inside a filter, or selects the whole array: it needs "
                f"every description at once, and they exceed {answer.limits.max_bytes} bytes "
                "(REGISTRY_JSONPATH_MAX_BYTES); select descriptions with [*] or a filter on @ instead"
            )
        texts.append(text)

    def evaluate() -> bytes:
        with _timed(answer.clock):
            array = [msgspec.json.decode(text) for text in texts]
            return b"[" + b",".join(answer.encode(query.finditer(array))) + b"]"

    return await off_the_loop(evaluate)
