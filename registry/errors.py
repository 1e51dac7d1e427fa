"""Typed errors of the domain. The HTTP layer maps each to an RFC 7807 problem in one place."""

from __future__ import annotations

from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

from registry.descriptions.ids import id_problem
from registry.descriptions.validation import FieldError


class RegistryError(Exception):
    """Base class: ``status`` is the HTTP status the problem is reported with."""

    status: HTTPStatus = HTTPStatus.INTERNAL_SERVER_ERROR

    def __init__(self, detail: str, *, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.headers = headers or {}
        #: Extension members of the problem document.
        self.extra = extra


class BadRequest(RegistryError):
    status = HTTPStatus.BAD_REQUEST


class InvalidDescription(BadRequest):
    """The description (or a patch result) is not a valid TD; every problem is listed."""

    def __init__(self, errors: Sequence[FieldError], detail: str | None = None) -> None:
        count = len(errors)
        super().__init__(
            detail or f"The Thing Description is invalid: {count} problem{'s' if count != 1 else ''} found",
            validationErrors=[{"field": error.field, "description": error.description} for error in errors],
        )
        self.errors = list(errors)


class InvalidId(BadRequest):
    """An id that is not an absolute IRI (RFC 3987) within the size limit (registry/descriptions/ids.py).

    ``parameter`` names the query parameter the id came in (``invalidParams``); without it the id is the
    description's ``id`` (the path's and the body's, which must be equal: ``validationErrors``)."""

    #: Characters of the refused id repeated in the problem's detail.
    SHOWN = 120

    def __init__(self, thing_id: str, reason: str, *, parameter: str | None = None) -> None:
        shown = thing_id if len(thing_id) <= self.SHOWN else thing_id[: self.SHOWN] + "…"
        where = f"The query parameter {parameter}" if parameter else "The id"
        detail = f"{where} {shown!r} is not an id this directory accepts: {reason}"
        if parameter:
            super().__init__(detail, invalidParams=[{"name": parameter, "reason": reason}])
        else:
            super().__init__(detail, validationErrors=[{"field": "id", "description": reason}])

    @classmethod
    def check(cls, thing_id: str, *, parameter: str | None = None) -> None:
        """Refuse ``thing_id`` unless the directory accepts it as an id."""
        problem = id_problem(thing_id)
        if problem is not None:
            raise cls(thing_id, problem.reason, parameter=parameter)


class Unauthorized(RegistryError):
    """No credentials where they are needed, or credentials that cannot be verified (RFC 6750)."""

    status = HTTPStatus.UNAUTHORIZED


class Forbidden(RegistryError):
    """Verified credentials that do not allow the request; ``rule`` names the rule that refused it."""

    status = HTTPStatus.FORBIDDEN

    def __init__(self, detail: str, *, rule: str, **extra: Any) -> None:
        super().__init__(detail, rule=rule, **extra)
        self.rule = rule


class NotFound(RegistryError):
    status = HTTPStatus.NOT_FOUND


class Conflict(RegistryError):
    status = HTTPStatus.CONFLICT


class PreconditionFailed(RegistryError):
    status = HTTPStatus.PRECONDITION_FAILED


class NotAcceptable(RegistryError):
    """No media type the client accepts can carry the answer (RFC 9110 §15.5.7)."""

    status = HTTPStatus.NOT_ACCEPTABLE


class BadGateway(RegistryError):
    """A server the directory called on the client's behalf (a federated SPARQL endpoint) failed."""

    status = HTTPStatus.BAD_GATEWAY


class UnsupportedMediaType(RegistryError):
    status = HTTPStatus.UNSUPPORTED_MEDIA_TYPE


class NotSupported(RegistryError):
    """An operation a standard API defines that this directory does not offer (501)."""

    status = HTTPStatus.NOT_IMPLEMENTED


class ServiceUnavailable(RegistryError):
    status = HTTPStatus.SERVICE_UNAVAILABLE


class TooManyRequests(RegistryError):
    status = HTTPStatus.TOO_MANY_REQUESTS


class DatabaseUnavailable(ServiceUnavailable):
    """PostgreSQL cannot be reached (or did not answer in time): the request may succeed when retried."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"Retry-After": "5"})


class StatementTimeout(DatabaseUnavailable):
    """PostgreSQL cancelled a statement that ran past its ``statement_timeout``."""
