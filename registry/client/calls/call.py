"""A request of the directory's HTTP API and how to read its answer (``Call``), a page of a listing (``Page``),
and what every call uses to build its request and read its answer."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from registry.client.errors import problem_from

T = TypeVar("T")
Result = TypeVar("Result")
Item = TypeVar("Item")

TD_JSON = "application/td+json"
MERGE_PATCH_JSON = "application/merge-patch+json"


#: Methods whose request may be sent twice with the effect of once (RFC 9110, 9.2.2).
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
#: Failures of a request on a connection the server closed before answering: a kept-alive connection it closed
#: after its idle timeout just as the request went out (it read nothing, or nothing it acted on).
CLOSED_BEFORE_ANSWER = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


@dataclasses.dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request and how to read its answer."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Mapping[str, Any] | None = None
    headers: Mapping[str, str] | None = None
    content: bytes | None = None
    #: A POST that may be sent twice with the effect of once (a lease renewal, a query); other methods by RFC 9110.
    repeatable: bool = False

    def retried_after(self, error: httpx.TransportError) -> bool:
        """Whether the request is sent once more after ``error``: an idempotent one whose connection the server
        closed before answering. A POST that creates something never is (it may have been acted on)."""
        return (self.repeatable or self.method in IDEMPOTENT_METHODS) and isinstance(error, CLOSED_BEFORE_ANSWER)

    def request(self, http: httpx.AsyncClient | httpx.Client) -> httpx.Request:
        return http.build_request(
            self.method, self.path, params=self.params, headers=self.headers, content=self.content
        )

    def reading(self, parse: Callable[[httpx.Response], Result]) -> Call[Result]:
        """The same request, its answer read by ``parse``."""
        return Call(self.method, self.path, parse, self.params, self.headers, self.content)


@dataclasses.dataclass(frozen=True, slots=True)
class Page(Generic[Item]):
    """One page of a listing, and the call that fetches the next one (None on the last page)."""

    items: Sequence[Item]
    next: Call[Page[Item]] | None


def thing_path(thing_id: str) -> str:
    return "/things/" + quote(thing_id, safe="")


def api_thing_path(thing_id: str, tail: str) -> str:
    return "/api/v1/things/" + quote(thing_id, safe="") + "/" + tail


def checked(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 400:
        raise problem_from(response)
    return response


def json_of(response: httpx.Response) -> Any:
    return checked(response).json()


def nothing(response: httpx.Response) -> None:
    checked(response)


def decoded(result_type: type[T]) -> Callable[[httpx.Response], T]:
    def parse(response: httpx.Response) -> T:
        return msgspec.json.decode(checked(response).content, type=result_type)

    return parse


def given(**values: Any) -> dict[str, Any]:
    """Query parameters that were given (booleans as true/false)."""
    return {
        name: ("true" if value else "false") if isinstance(value, bool) else value
        for name, value in values.items()
        if value is not None
    }


def encode(document: Any) -> bytes:
    return msgspec.json.encode(document)


def json_body(document: Any) -> dict[str, Any]:
    return {"headers": {"Content-Type": "application/json"}, "content": encode(document)}
