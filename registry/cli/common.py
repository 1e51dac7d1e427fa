"""What every client verb shares: the SDK client from --url, JSON or table output, and errors as exit status 1."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec
from rich.console import Console

from registry.client import (
    DirectoryUnreachable,
    ProblemError,
    RegistryClient,
)
from registry.client.clients import DEFAULT_URL
from registry.config import ConfigError, Settings
from registry.descriptions.model import lmos_kind

F = TypeVar("F", bound=Callable[..., Any])

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

#: Files ``registry import`` reads from a directory.
IMPORT_SUFFIXES = (".json", ".jsonld")


class ClientFailure(click.ClickException):
    """An error answer or an unreachable directory: printed as ``Error: …``, exit status 1."""

    def __init__(self, message: str, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.details = details or []

    def show(self, file: Any = None) -> None:
        err.print(f"[bold red]Error:[/] {self.message}", highlight=False, markup=True)
        for line in self.details:
            err.print(f"  {line}", highlight=False, markup=False)


def problem_lines(error: ProblemError) -> list[str]:
    """What the problem adds to its detail: invalid fields and parameters, where a query failed to parse."""
    lines = [f"{issue.field or '(document)'}: {issue.description}" for issue in error.validation_errors]
    lines += [f"parameter {param.name}: {param.reason}" for param in error.invalid_params]
    if "line" in error.problem and "column" in error.problem:
        lines.append(f"at line {error.problem['line']}, column {error.problem['column']}")
    return lines


@contextlib.contextmanager
def connect(url: str | None) -> Iterator[RegistryClient]:
    try:
        with RegistryClient(url) as client:
            yield client
    except ProblemError as error:
        raise ClientFailure(f"{error.status} {error.title}: {error.detail}", problem_lines(error)) from error
    except DirectoryUnreachable as error:
        raise ClientFailure(str(error)) from error


def client_options(command: F) -> F:
    """``--url`` and ``--json``, shared by every client verb."""

    @click.option(
        "--url",
        envvar="REGISTRY_URL",
        show_envvar=True,
        help=f"Directory URL (default {DEFAULT_URL}).",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts instead of tables.")
    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return command(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def print_json(value: Any) -> None:
    click.echo(msgspec.json.format(msgspec.json.encode(value), indent=2).decode())


def read_document(path: str) -> dict[str, Any]:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        document = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ClientFailure(f"cannot read a JSON description from {path}: {error}") from error
    if not isinstance(document, dict):
        raise ClientFailure(f"{path} holds JSON, but not an object (a Thing Description)")
    return document


def kind_of(document: dict[str, Any]) -> str:
    kind = lmos_kind(document)
    return kind.value if kind else ""


def settings_from_env(**overrides: Any) -> Settings:
    """The directory's settings (REGISTRY_* variables, then command-line flags); bad values are usage errors."""
    try:
        return Settings.from_env(**overrides)
    except ConfigError as error:
        raise click.UsageError(str(error)) from error
