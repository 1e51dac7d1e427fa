"""RFC 7807 problem details for every 4xx/5xx, whatever raised it (domain, framework or a bug)."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException

from registry.errors import RegistryError
from registry.ops.logs import current_request_id
from registry.ops.metrics import FAILED_VALIDATIONS
from registry.store.database import translate

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"


def problem_response(
    status: int, detail: str, *, headers: dict[str, str] | None = None, **extra: Any
) -> Response[bytes]:
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        **extra,
    }
    return Response(
        content=msgspec.json.encode(body),
        status_code=status,
        media_type=PROBLEM_JSON + "; charset=utf-8",
        headers=headers,
    )


def _registry_error(request: Request[Any, Any, Any], error: RegistryError) -> Response[bytes]:
    if "validationErrors" in error.extra:  # a description refused as invalid, whichever check refused it
        FAILED_VALIDATIONS.inc()
    return problem_response(int(error.status), error.detail, headers=error.headers, **error.extra)


def _validation_error(request: Request[Any, Any, Any], error: ValidationException) -> Response[bytes]:
    """Litestar's own parameter validation (query/path types): named per parameter."""
    details = error.extra if isinstance(error.extra, list) else []
    invalid = [
        {"name": str(item.get("key", "")), "reason": str(item.get("message", ""))}
        for item in details
        if isinstance(item, dict)
    ]
    return problem_response(400, error.detail or "Invalid request", invalidParams=invalid)


def _http_error(request: Request[Any, Any, Any], error: HTTPException) -> Response[bytes]:
    status = error.status_code
    detail = error.detail or HTTPStatus(status).description
    if status == 404 and detail == "Not Found":
        detail = f"No resource at {request.url.path}"
    elif status == 405:
        detail = f"{request.method} is not allowed on {request.url.path}"
    headers = dict(error.headers or {})
    return problem_response(status, detail, headers=headers)


def _too_deep(request: Request[Any, Any, Any], error: RecursionError) -> Response[bytes]:
    """Bodies decoded by the framework (typed ``data``) have no depth limit of their own."""
    return problem_response(400, "The request is nested too deeply to be processed")


def _unexpected_error(request: Request[Any, Any, Any], error: Exception) -> Response[bytes]:
    # A driver error that reached here without translation still means what it means (e.g. 503, the database
    # is unavailable), never a 500.
    cause = error.__cause__ or error.__context__
    for candidate in (error, cause):
        domain = translate(candidate) if candidate is not None else None
        if domain is not None:
            return _registry_error(request, domain)
    # A bug: logged once, here, at error level with its traceback and the request id (the log's rate limit keeps
    # a bug that every request hits from flooding it).
    log.error(
        "unhandled error on %s %s: %s: %s",
        request.method,
        request.url.path,
        type(error).__name__,
        error,
        exc_info=error,
        extra={"request_id": current_request_id()},
    )
    return problem_response(500, "The directory failed to process the request; the error has been logged")


exception_handlers: dict[type[Exception] | int, Any] = {
    RegistryError: _registry_error,
    ValidationException: _validation_error,
    HTTPException: _http_error,
    RecursionError: _too_deep,
    Exception: _unexpected_error,
}

__all__ = ["PROBLEM_JSON", "exception_handlers", "problem_response"]
