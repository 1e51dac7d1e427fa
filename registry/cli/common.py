"""What every client verb shares: the SDK client from --url, JSON or table output, and errors as exit status 1."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource
from rich.measure import Measurement
from rich.table import Column, Table

from registry.cli.literal import LiteralConsole, json_text, literal, styled
from registry.client import (
    DirectoryUnreachable,
    ProblemError,
    RegistryClient,
)
from registry.client.clients import DEFAULT_TIMEOUT, DEFAULT_URL
from registry.config import ConfigError, Settings
from registry.descriptions.model import lmos_kind

F = TypeVar("F", bound=Callable[..., Any])

#: Every command prints through these: registrants' text literally (registry/cli/literal.py).
out = LiteralConsole(soft_wrap=True)
err = LiteralConsole(stderr=True, soft_wrap=True)

#: Files ``registry import`` reads from a directory.
IMPORT_SUFFIXES = (".json", ".jsonld")


class ClientFailure(click.ClickException):
    """An error answer or an unreachable directory: printed as ``Error: …``, exit status 1."""

    def __init__(self, message: str, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.details = details or []

    def show(self, file: Any = None) -> None:
        err.print(styled(("Error:", "bold red"), f" {self.message}"))
        for line in self.details:
            err.print(f"  {line}")


#: The directory's name for a parameter → the names of the command's parameters that may carry it, where they differ.
API_NAMES = {"q": ("words", "text"), "type": ("type_",), "range": ("version_range",), "format": ("tool_format",)}


def typed_name(api_name: str) -> str:
    """How the user gave the parameter the directory calls ``api_name``: the option as typed, or the argument."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        param = _parameter_for(ctx, api_name)
        if param is not None:
            return _as_typed(param, ctx.meta.get(TYPED_ARGS, []))
    return f"parameter {api_name}"


def _parameter_for(ctx: click.Context, api_name: str) -> click.Parameter | None:
    """The command's parameter that carries ``api_name``: the first given on the command line, else the first that
    may carry it."""
    params = {param.name: param for param in ctx.command.params}
    member = re.sub(r"^requirements\[\d+\]\.", "", api_name)  # `registry resolve` sends one requirement
    candidates = [params[name] for name in API_NAMES.get(member, (member,)) if name in params]
    given = [param for param in candidates if ctx.get_parameter_source(param.name or "") is ParameterSource.COMMANDLINE]
    return next(iter(given or candidates), None)


def _as_typed(param: click.Parameter, typed: list[str]) -> str:
    """An argument by its name; an option by the flag the user typed (of ``typed``, the arguments after the verb),
    else by its longest flag."""
    if isinstance(param, click.Argument):
        return param.human_readable_name
    for flag in [*param.opts, *param.secondary_opts]:
        if any(_spells(arg, flag) for arg in typed):
            return flag
    return max(param.opts, key=len)


def _spells(arg: str, flag: str) -> bool:
    """Whether a typed argument gives ``flag``: as it is, a short flag with its value attached (``-kagent``), or a
    long one with ``=value``."""
    return arg == flag or arg.startswith(flag if len(flag) == 2 else f"{flag}=")


def problem_lines(error: ProblemError) -> list[str]:
    """What the problem adds to its detail: invalid fields and parameters (named as the user typed them), where a
    query failed to parse."""
    lines = [f"{issue.field or '(document)'}: {issue.description}" for issue in error.validation_errors]
    lines += [f"{typed_name(param.name)}: {param.reason}" for param in error.invalid_params]
    if "line" in error.problem and "column" in error.problem:
        lines.append(f"at line {error.problem['line']}, column {error.problem['column']}")
    return lines


def _import_httpcore_without_trio() -> None:
    """httpcore imports trio wherever it is installed (encode/httpcore#946; the development install has it, for
    selenium), a noticeable part of every command's start, for a client that is synchronous and never runs on trio.
    trio is hidden from that one import only, so httpcore's async code knows no trio and anything else may import it."""
    if "httpcore" in sys.modules or "trio" in sys.modules:
        return
    sys.modules["trio"] = None  # type: ignore[assignment]  # an import of a module mapped to None fails
    try:
        import httpcore  # noqa: F401
    finally:
        del sys.modules["trio"]


@contextlib.contextmanager
def connect(url: str | None, *, timeout: float = DEFAULT_TIMEOUT) -> Iterator[RegistryClient]:
    _import_httpcore_without_trio()
    context = click.get_current_context(silent=True)
    token = context.meta.get(TOKEN) if context is not None else None
    try:
        with RegistryClient(url, token=token, timeout=timeout) as client:
            yield client
    except ProblemError as error:
        raise ClientFailure(f"{error.status} {error.title}: {error.detail}", problem_lines(error)) from error
    except DirectoryUnreachable as error:
        raise ClientFailure(str(error)) from error


#: ``ctx.meta`` key: the arguments the user typed after the verb (to name an option as it was typed).
TYPED_ARGS = "registry.typed_args"
URL_HELP = f"Directory URL (default: REGISTRY_URL, else {DEFAULT_URL})."
JSON_HELP = "Print JSON for scripts instead of tables."
TOKEN_HELP = "API key or access token sent as 'Authorization: Bearer …' (default: REGISTRY_TOKEN)."
#: ``ctx.meta`` key: the --token given before or after the verb.
TOKEN = "registry.token"


class RegistryGroup(click.Group):
    """The ``registry`` group: keeps what was typed after the verb, for error messages that name it."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        ctx.meta[TYPED_ARGS] = list(args[1:])
        return super().resolve_command(ctx, args)


def client_options(command: F) -> F:
    """``--url`` and ``--json``, shared by every client verb; also accepted before the verb (``registry --url U
    search``), where ``REGISTRY_URL`` is read. Given after the verb, they win."""

    @click.option("--url", help=URL_HELP)
    @click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
    @click.option("--token", help=TOKEN_HELP)
    @functools.wraps(command)
    def wrapper(*args: Any, url: str | None, as_json: bool, token: str | None, **kwargs: Any) -> Any:
        context = click.get_current_context()
        before_verb = context.find_root().params
        context.meta[TOKEN] = token or before_verb.get("token")
        return command(
            *args, url=url or before_verb.get("url"), as_json=as_json or bool(before_verb.get("as_json")), **kwargs
        )

    return wrapper  # type: ignore[return-value]


def wants_json(as_json: bool) -> bool:
    """Whether to print JSON: ``--json`` given after the verb or before it (``registry --json keys list``)."""
    context = click.get_current_context(silent=True)
    return as_json or (context is not None and bool(context.find_root().params.get("as_json")))


def id_column(ids: Iterable[str]) -> Column:
    """Ids are never cut: as wide as the longest while the table fits a terminal, else folded over lines, whole."""
    longest = max(map(len, ids), default=2)
    return Column("id", min_width=min(longest, max(out.width // 2, 20)), overflow="fold")


#: Width a table is laid out in to measure its natural width (each row on one line) where stdout is no terminal.
_UNBOUNDED_WIDTH = 1_000_000


def stdout_is_terminal() -> bool:
    """Whether stdout is a terminal (not a pipe, a file or a CI log), whatever FORCE_COLOR or TTY_COMPATIBLE say."""
    stream = out.file
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor (a test's capture) is no terminal
        return False


def print_table(table: Table) -> None:
    """Print ``table`` without ever cutting a cell.

    In a terminal the table takes the terminal's width and its cells wrap (a word longer than its column folds onto
    the next line). Anywhere else (a pipe, a file, a CI log) Rich would assume 80 columns, or COLUMNS, and wrap or
    cut: there each row is one line as wide as its cells need, so ids, file names, field paths and key ids are
    whole and ``grep`` finds them; trailing blanks are left out.
    """
    for column in table.columns:
        column.overflow = "fold"
        column.no_wrap = False
    if stdout_is_terminal():
        out.print(table, soft_wrap=False)  # soft wrapping would lay the table out wider than the terminal
        return
    measuring = LiteralConsole(file=io.StringIO(), width=_UNBOUNDED_WIDTH, color_system=None)
    width = Measurement.get(measuring, measuring.options, table).maximum
    layout = LiteralConsole(file=io.StringIO(), width=max(width, 1), color_system=None)
    with layout.capture() as captured:
        layout.print(table)
    for line in captured.get().splitlines():
        click.echo(line.rstrip())


def print_ids(ids: Iterable[str]) -> None:
    for thing_id in ids:
        click.echo(literal(thing_id))


def print_json(value: Any) -> None:
    click.echo(json_text(value))


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
