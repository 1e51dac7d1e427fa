"""Python SDK of the LMOS registry: ``AsyncRegistryClient`` (async first), ``RegistryClient`` (blocking) and
``AgentRegistration`` (register on startup, keep the lease alive, deregister on shutdown)."""

from registry.client.clients import DEFAULT_URL, AsyncRegistryClient, RegistryClient
from registry.client.errors import (
    BadRequestError,
    ConflictError,
    DirectoryUnreachable,
    NotFoundError,
    PreconditionFailedError,
    ProblemError,
    RegistryClientError,
    ValidationIssue,
)
from registry.client.models import Event, Lease, Notice, SearchPage, WriteResult
from registry.client.registration import AgentRegistration, SyncAgentRegistration

__all__ = [
    "DEFAULT_URL",
    "AgentRegistration",
    "AsyncRegistryClient",
    "BadRequestError",
    "ConflictError",
    "DirectoryUnreachable",
    "Event",
    "Lease",
    "NotFoundError",
    "Notice",
    "PreconditionFailedError",
    "ProblemError",
    "RegistryClient",
    "RegistryClientError",
    "SearchPage",
    "SyncAgentRegistration",
    "ValidationIssue",
    "WriteResult",
]
