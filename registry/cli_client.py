"""Client verbs of the ``registry`` command: talk to a running directory through the SDK.

Tables for people, ``--json`` for scripts; errors exit non-zero with the problem's detail.
"""

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
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from registry.client import DirectoryUnreachable, ProblemError, RegistryClient
from registry.client.calls import EVENT_TYPES, EXPORT_FORMATS
from registry.client.clients import DEFAULT_URL
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


def _problem_lines(error: ProblemError) -> list[str]:
    return [f"{issue.field or '(document)'}: {issue.description}" for issue in error.validation_errors]


@contextlib.contextmanager
def _client(url: str | None) -> Iterator[RegistryClient]:
    try:
        with RegistryClient(url) as client:
            yield client
    except ProblemError as error:
        raise ClientFailure(f"{error.status} {error.title}: {error.detail}", _problem_lines(error)) from error
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


def _print_json(value: Any) -> None:
    click.echo(msgspec.json.format(msgspec.json.encode(value), indent=2).decode())


def _read_document(path: str) -> dict[str, Any]:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        document = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ClientFailure(f"cannot read a JSON description from {path}: {error}") from error
    if not isinstance(document, dict):
        raise ClientFailure(f"{path} holds JSON, but not an object (a Thing Description)")
    return document


def _kind(document: dict[str, Any]) -> str:
    kind = lmos_kind(document)
    return kind.value if kind else ""


def _things_table(documents: list[Any]) -> Table:
    table = Table("id", "title", "kind", "expires", box=None, header_style="bold")
    for document in documents:
        if not isinstance(document, dict):
            table.add_row(str(document), "", "", "")
            continue
        registration = document.get("registration") or {}
        table.add_row(
            str(document.get("id", "")),
            str(document.get("title", "")),
            str(document.get("kind") or _kind(document)),
            str(registration.get("expires", "") if isinstance(registration, dict) else ""),
        )
    return table


@click.command()
@click.argument("file", type=click.Path(allow_dash=True))
@click.option("--ttl", type=float, help="Lease length in seconds (sets registration.ttl).")
@client_options
def register(file: str, ttl: float | None, url: str | None, as_json: bool) -> None:
    """Register (or replace) the Thing Description in FILE ('-' for stdin)."""
    document = _read_document(file)
    with _client(url) as client:
        result = client.register(document, ttl=ttl)
    if as_json:
        _print_json(result)
        return
    out.print(f"{'created' if result.created else 'updated'} {result.id} (etag {result.etag})", highlight=False)
    for notice in result.notices:
        out.print(f"  notice {notice.code}: {notice.message}", highlight=False, markup=False)


@click.command()
@click.argument("thing_id")
@client_options
def get(thing_id: str, url: str | None, as_json: bool) -> None:
    """Print the (enriched) Thing Description THING_ID."""
    with _client(url) as client:
        _print_json(client.get(thing_id))


@click.command(name="list")
@click.option("--offset", type=click.IntRange(min=0))
@click.option("--limit", type=click.IntRange(min=1))
@client_options
def list_things(offset: int | None, limit: int | None, url: str | None, as_json: bool) -> None:
    """List the registered descriptions."""
    with _client(url) as client:
        documents = client.list(offset=offset, limit=limit)
    if as_json:
        _print_json(documents)
    else:
        out.print(_things_table(documents))


@click.command()
@click.argument("thing_id")
@client_options
def delete(thing_id: str, url: str | None, as_json: bool) -> None:
    """Deregister THING_ID."""
    with _client(url) as client:
        client.delete(thing_id)
    if as_json:
        _print_json({"id": thing_id, "deleted": True})
    else:
        out.print(f"deleted {thing_id}", highlight=False)


@click.command()
@click.argument("thing_id")
@client_options
def lease(thing_id: str, url: str | None, as_json: bool) -> None:
    """Renew the lease of THING_ID (expires = now + its ttl)."""
    with _client(url) as client:
        renewed = client.renew_lease(thing_id)
    if as_json:
        _print_json(renewed)
    else:
        out.print(f"{renewed.id} leased until {renewed.expires}", highlight=False)


@click.command()
@click.option("--kind", type=click.Choice(["agent", "tool"]))
@click.option("--vendor")
@click.option("--capability")
@click.option("--capability-version", help="Semantic version range of the capability, e.g. '^1.2'.")
@click.option("-q", "--query", "text", help="Free text.")
@click.option("--limit", type=click.IntRange(min=1))
@click.option("--cursor")
@client_options
def search(
    kind: str | None,
    vendor: str | None,
    capability: str | None,
    capability_version: str | None,
    text: str | None,
    limit: int | None,
    cursor: str | None,
    url: str | None,
    as_json: bool,
) -> None:
    """Find agents and tools by kind, vendor, capability and text."""
    with _client(url) as client:
        page = client.search(
            kind=kind,
            vendor=vendor,
            capability=capability,
            capability_version=capability_version,
            q=text,
            limit=limit,
            cursor=cursor,
        )
    if as_json:
        _print_json(page)
        return
    out.print(_things_table(page.items))
    if page.next_cursor:
        out.print(f"more: --cursor {page.next_cursor}", highlight=False)


@click.command()
@click.argument("query", required=False)
@click.option("--file", "query_file", type=click.File("r"), help="Read the query from a file.")
@click.option("--post", is_flag=True, help="Send the query with POST (long queries).")
@client_options
def sparql(query: str | None, query_file: Any, post: bool, url: str | None, as_json: bool) -> None:
    """Run a SPARQL query over the descriptions (SELECT results as a table)."""
    text = query_file.read() if query_file else query
    if not text:
        raise click.UsageError("give a QUERY or --file")
    with _client(url) as client:
        result = client.sparql(text, post=post)
    if as_json or not isinstance(result, dict) or "results" not in result:
        if isinstance(result, str):
            click.echo(result)
        else:
            _print_json(result)
        return
    variables = result.get("head", {}).get("vars", [])
    table = Table(*variables, box=None, header_style="bold")
    for binding in result["results"].get("bindings", []):
        table.add_row(*(str(binding.get(name, {}).get("value", "")) for name in variables))
    out.print(table)


@click.command()
@click.argument("capability")
@click.option("--range", "version_range", help="Semantic version range, e.g. '>=1.2 <2'.")
@click.option("--strategy", help="How to choose among providers (server-defined).")
@client_options
def resolve(capability: str, version_range: str | None, strategy: str | None, url: str | None, as_json: bool) -> None:
    """Resolve a capability requirement to providers."""
    requirement = {"capability": capability, "range": version_range, "strategy": strategy}
    with _client(url) as client:
        _print_json(client.resolve([{key: value for key, value in requirement.items() if value is not None}]))


@click.command()
@click.argument("thing_id")
@click.option("--format", "tool_format", type=click.Choice(EXPORT_FORMATS), required=True)
@client_options
def export(thing_id: str, tool_format: str, url: str | None, as_json: bool) -> None:
    """Export THING_ID's actions as LLM tool definitions."""
    with _client(url) as client:
        _print_json(client.export(thing_id, tool_format))


@click.command()
@click.argument("event_type", required=False, type=click.Choice(EVENT_TYPES))
@click.option("--diff", is_flag=True, help="Full TD on create, merge patch on update.")
@click.option("--kind", type=click.Choice(["agent", "tool"]))
@click.option("--vendor")
@click.option("--capability")
@click.option("-q", "--query", "text", help="Free text in title or description.")
@click.option("--last-event-id", type=click.IntRange(min=0), help="Replay the events after this one first.")
@click.option("--count", type=click.IntRange(min=1), help="Stop after this many events.")
@client_options
def watch(
    event_type: str | None,
    diff: bool,
    kind: str | None,
    vendor: str | None,
    capability: str | None,
    text: str | None,
    last_event_id: int | None,
    count: int | None,
    url: str | None,
    as_json: bool,
) -> None:
    """Print change events as they happen (reconnects and resumes by itself)."""
    seen = 0
    with _client(url) as client:
        events = client.events(
            event_type, diff=diff, kind=kind, vendor=vendor, capability=capability, q=text, last_event_id=last_event_id
        )
        for event in events:
            if as_json:
                click.echo(msgspec.json.encode(event).decode())
            else:
                line = f"{event.seq}\t{event.type}\t{event.thing_id}"
                out.print(line + (f"\t{json.dumps(event.data)}" if diff else ""), highlight=False, markup=False)
            sys.stdout.flush()
            seen += 1
            if count is not None and seen >= count:
                return


@click.command(name="import")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--ttl", type=float, help="Lease length in seconds for every description.")
@client_options
def import_directory(directory: Path, ttl: float | None, url: str | None, as_json: bool) -> None:
    """Register every *.json / *.jsonld file under DIRECTORY; summarise what failed and why."""
    files = sorted(path for path in directory.rglob("*") if path.is_file() and path.suffix in IMPORT_SUFFIXES)
    registered: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    progress = Progress(
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=as_json,
    )
    with _client(url) as client, progress:
        task = progress.add_task("import", total=len(files))
        for path in files:
            name = str(path.relative_to(directory))
            try:
                result = client.register(_read_document(str(path)), ttl=ttl)
            except ClientFailure as error:
                failed.append({"file": name, "status": None, "detail": error.message, "validationErrors": []})
            except ProblemError as error:
                issues = [msgspec.to_builtins(issue) for issue in error.validation_errors]
                failed.append(
                    {"file": name, "status": error.status, "detail": error.detail, "validationErrors": issues}
                )
            else:
                registered.append({"file": name, "id": result.id, "created": result.created})
            progress.advance(task)
    if as_json:
        _print_json({"registered": registered, "failed": failed})
    else:
        out.print(f"{len(registered)} registered, {len(failed)} failed (of {len(files)} files)", highlight=False)
        if failed:
            table = Table("file", "status", "why", box=None, header_style="bold")
            for failure in failed:
                reasons = [failure["detail"]] + [
                    f"{issue['field'] or '(document)'}: {issue['description']}" for issue in failure["validationErrors"]
                ]
                table.add_row(failure["file"], str(failure["status"] or "-"), "\n".join(reasons))
            out.print(table)
    if failed:
        sys.exit(1)


COMMANDS = (
    register,
    get,
    list_things,
    delete,
    lease,
    search,
    sparql,
    resolve,
    export,
    watch,
    import_directory,
)


def add_client_commands(group: click.Group) -> None:
    for command in COMMANDS:
        group.add_command(command)


__all__ = ["add_client_commands"]
