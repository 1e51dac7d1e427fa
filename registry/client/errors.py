"""Typed errors of the SDK: every 4xx/5xx of the directory arrives as a ``ProblemError`` with its details."""

from __future__ import annotations

from typing import Any

import httpx

from registry.wire import InvalidParam, ValidationIssue


class RegistryClientError(Exception):
    """Base class of everything the SDK raises."""


class DirectoryUnreachable(RegistryClientError):
    """The directory could not be reached (connection refused, timeout, broken stream)."""


class UnexpectedResponse(RegistryClientError):
    """A successful answer the call cannot read (e.g. a graph where SPARQL results were expected)."""


class ProblemError(RegistryClientError):
    """The directory answered with an RFC 7807 problem (or another error status)."""

    def __init__(self, status: int, title: str, detail: str, problem: dict[str, Any]) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        #: The whole problem document, extension members included.
        self.problem = problem
        self.validation_errors = [
            ValidationIssue(str(issue.get("field", "")), str(issue.get("description", "")))
            for issue in _objects(problem.get("validationErrors"))
        ]
        self.invalid_params = [
            InvalidParam(str(item.get("name", "")), str(item.get("reason", "")))
            for item in _objects(problem.get("invalidParams"))
        ]
        super().__init__(self._message())

    def _message(self) -> str:
        """The status, title and detail, then one line per field the directory named, so that a log line or a
        traceback says what to fix."""
        lines = [f"{self.status} {self.title}: {self.detail}"]
        lines += [f"  - {issue.field or '(document)'}: {issue.description}" for issue in self.validation_errors]
        lines += [f"  - parameter {param.name}: {param.reason}" for param in self.invalid_params]
        return "\n".join(lines)


def _objects(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


class BadRequestError(ProblemError):
    """400: the request or the description is invalid (see ``validation_errors``)."""


class UnauthorizedError(ProblemError):
    """401: credentials missing or refused (give ``token=`` or set REGISTRY_TOKEN)."""


class ForbiddenError(ProblemError):
    """403: the credentials do not allow this; ``problem["rule"]`` names the rule (scope, owner, namespace, …)."""


class TooManyRequestsError(ProblemError):
    """429: a rate limit or a cap on event streams; worth retrying later (the response said when)."""


class NotFoundError(ProblemError):
    """404: no such description (or it expired)."""


class ConflictError(ProblemError):
    """409: e.g. a lease renewal of a registration without ttl."""


class PreconditionFailedError(ProblemError):
    """412: ``If-Match`` did not match the current version, or (``create_only``) the description exists."""


class UnsupportedMediaTypeError(ProblemError):
    """415: the body was sent with a content type the endpoint does not take."""


class ServiceUnavailableError(ProblemError):
    """503: e.g. a SPARQL query ran past the directory's time limit."""


_BY_STATUS: dict[int, type[ProblemError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    429: TooManyRequestsError,
    409: ConflictError,
    412: PreconditionFailedError,
    415: UnsupportedMediaTypeError,
    503: ServiceUnavailableError,
}


def problem_from(response: httpx.Response) -> ProblemError:
    try:
        problem = response.json()
    except ValueError:
        problem = None
    if not isinstance(problem, dict):
        problem = {"detail": response.text[:500] or response.reason_phrase}
    cls = _BY_STATUS.get(response.status_code, ProblemError)
    return cls(
        response.status_code,
        str(problem.get("title") or response.reason_phrase),
        str(problem.get("detail") or response.reason_phrase),
        problem,
    )


__all__ = [
    "BadRequestError",
    "ConflictError",
    "DirectoryUnreachable",
    "ForbiddenError",
    "InvalidParam",
    "NotFoundError",
    "PreconditionFailedError",
    "ProblemError",
    "RegistryClientError",
    "ServiceUnavailableError",
    "TooManyRequestsError",
    "UnauthorizedError",
    "UnexpectedResponse",
    "UnsupportedMediaTypeError",
    "ValidationIssue",
    "problem_from",
]
