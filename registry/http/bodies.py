"""Reading requests: query parameters, content-type negotiation and JSON decoding, with precise errors."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import msgspec
from litestar import Request

from registry.errors import BadRequest, UnsupportedMediaType

TD_JSON = "application/td+json"
LD_JSON = "application/ld+json"
JSON = "application/json"
MERGE_PATCH_JSON = "application/merge-patch+json"

#: Media types a Thing Description may be sent as.
TD_MEDIA_TYPES = (TD_JSON, JSON, LD_JSON)

#: Deeper JSON is refused before anything walks it recursively.
MAX_JSON_DEPTH = 128


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


def _depth_exceeded(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return False


def decode_json(raw: bytes) -> Any:
    if not raw.strip():
        raise BadRequest("The request body is empty; a JSON document is required")
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as error:
        raise BadRequest(f"The request body is not valid JSON: {error}") from error
    except RecursionError as error:
        raise BadRequest(f"The JSON document is nested too deeply (more than {MAX_JSON_DEPTH} levels)") from error
    if _depth_exceeded(value, MAX_JSON_DEPTH):
        raise BadRequest(f"The JSON document is nested too deeply (more than {MAX_JSON_DEPTH} levels)")
    # Only a \u0000 escape can produce U+0000 (raw control characters are invalid JSON): walk only then.
    if b"\\u0000" in raw and _contains_nul(value):
        raise BadRequest("The JSON document contains a U+0000 (NUL) character, which cannot be stored")
    return value


async def read_json(request: Request[Any, Any, Any], allowed: Collection[str]) -> Any:
    require_media_type(request, allowed)
    return decode_json(await request.body())


def reject_unknown_parameters(request: Request[Any, Any, Any], allowed: Collection[str]) -> None:
    """A typo in a filter must not silently widen a query: unknown query parameters are a 400."""
    unknown = sorted(set(request.query_params.keys()) - set(allowed))
    if unknown:
        raise BadRequest(
            f"Unknown query parameter(s): {', '.join(unknown)}; supported are {', '.join(sorted(allowed))}",
            invalidParams=[{"name": name, "reason": "not supported"} for name in unknown],
        )
