"""Reading requests: query parameters, content-type negotiation and JSON decoding, with precise errors."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Collection
from typing import Any

import msgspec
from litestar import Request
from litestar.types import Empty

from registry.config import Settings
from registry.errors import BadRequest, UnsupportedMediaType

TD_JSON = "application/td+json"
LD_JSON = "application/ld+json"
JSON = "application/json"
MERGE_PATCH_JSON = "application/merge-patch+json"
#: The media type the directory's TD declares for answers without a body (WoT Discovery's Directory Thing Model).
EMPTY = "application/x-empty"

#: Media types a Thing Description may be sent as.
TD_MEDIA_TYPES = (TD_JSON, JSON, LD_JSON)
#: Media types of the other JSON bodies (imports, MCP publish, resolution, compatibility, status changes).
JSON_MEDIA_TYPES = (JSON,)

#: Bodies up to this size are decoded on the event loop; larger ones in a thread (decoding and walking a 4 MB body
#: takes long enough to stall every other request).
INLINE_DECODE_BYTES = 64 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class JsonLimits:
    """The shape every JSON body must keep (``REGISTRY_MAX_JSON_DEPTH``, ``REGISTRY_MAX_JSON_NODES``): checked
    before anything walks it recursively, and the same limits JSONPath search is built for."""

    max_depth: int = 128
    max_nodes: int = 500_000

    @classmethod
    def of(cls, settings: Settings) -> JsonLimits:
        return cls(settings.max_json_depth, settings.max_json_nodes)


def media_type(request: Request[Any, Any, Any]) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def require_media_type(request: Request[Any, Any, Any], allowed: Collection[str]) -> None:
    given = media_type(request)
    if given not in allowed:
        raise UnsupportedMediaType(
            f"Content-Type {given or '(none)'} is not accepted here; send one of: {', '.join(allowed)}",
            headers={"Accept-Patch" if MERGE_PATCH_JSON in allowed else "Accept": ", ".join(allowed)},
        )


def _contains_nul(value: Any) -> bool:
    """PostgreSQL text and jsonb cannot hold U+0000, so such documents are refused as input errors."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _check_shape(value: Any, limits: JsonLimits) -> None:
    """Refuse documents deeper or with more values than ``limits``, walking each value once (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > limits.max_nodes:
            raise BadRequest(f"The JSON document has more than {limits.max_nodes} values (REGISTRY_MAX_JSON_NODES)")
        if depth > limits.max_depth:
            raise BadRequest(
                f"The JSON document is nested too deeply (more than {limits.max_depth} levels, REGISTRY_MAX_JSON_DEPTH)"
            )
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)


def decode_json(raw: bytes, limits: JsonLimits) -> Any:
    if not raw.strip():
        raise BadRequest("The request body is empty; a JSON document is required")
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as error:
        raise BadRequest(f"The request body is not valid JSON: {error}") from error
    except RecursionError as error:
        raise BadRequest(f"The JSON document is nested too deeply (more than {limits.max_depth} levels)") from error
    _check_shape(value, limits)
    # Only a \u0000 escape can produce U+0000 (raw control characters are invalid JSON): walk only then.
    if b"\\u0000" in raw and _contains_nul(value):
        raise BadRequest("The JSON document contains a U+0000 (NUL) character, which cannot be stored")
    return value


async def _decoded(raw: bytes, limits: JsonLimits) -> Any:
    """``decode_json``; large bodies are decoded and checked off the event loop."""
    if len(raw) <= INLINE_DECODE_BYTES:
        return decode_json(raw, limits)
    return await asyncio.to_thread(decode_json, raw, limits)


async def read_json(request: Request[Any, Any, Any], allowed: Collection[str], limits: JsonLimits) -> Any:
    """The body as JSON within ``limits``."""
    require_media_type(request, allowed)
    return await _decoded(await request.body(), limits)


def limited_request(limits: JsonLimits) -> type[Request[Any, Any, Any]]:
    """The request class of the application: bodies the framework decodes (``data`` parameters) get the same
    limits, NUL check and off-loop decoding as ``read_json``."""

    class LimitedRequest(Request[Any, Any, Any]):
        async def json(self) -> Any:
            """The body as JSON, if it was sent as JSON: a ``text/plain`` or form body (what a cross-site page
            can send without a preflight) is a 415, never parsed."""
            state = self._connection_state
            if state.json is Empty:
                require_media_type(self, JSON_MEDIA_TYPES)
                state.json = await _decoded(await self.body() or b"null", limits)
            return state.json

    return LimitedRequest


def reject_unknown_parameters(request: Request[Any, Any, Any], allowed: Collection[str]) -> None:
    """A typo in a filter must not silently widen a query: unknown query parameters are a 400."""
    unknown = sorted(set(request.query_params.keys()) - set(allowed))
    if unknown:
        raise BadRequest(
            f"Unknown query parameter(s): {', '.join(unknown)}; supported are {', '.join(sorted(allowed))}",
            invalidParams=[{"name": name, "reason": "not supported"} for name in unknown],
        )
