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

from registry.client import (
    TOOL_FORMATS,
    DirectoryUnreachable,
    Facets,
    ProblemError,
    RegistryClient,
    SearchItem,
    UnexpectedResponse,
)
from registry.client.calls import EVENT_TYPES, SEARCH_SORTS
from registry.client.clients import DEFAULT_URL
from registry.descriptions.model import lmos_kind
from registry.descriptions.summary import KINDS

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
    """What the problem adds to its detail: invalid fields and parameters, where a query failed to parse."""
    lines = [f"{issue.field or '(document)'}: {issue.description}" for issue in error.validation_errors]
    lines += [f"parameter {param.name}: {param.reason}" for param in error.invalid_params]
    if "line" in error.problem and "column" in error.problem:
        lines.append(f"at line {error.problem['line']}, column {error.problem['column']}")
    return lines


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


def _search_table(items: list[SearchItem]) -> Table:
    table = Table("id", "title", "kind", "vendor", "version", "capabilities", box=None, header_style="bold")
    for item in items:
        capabilities = ", ".join(  # an lmos capability and the action offering it often share name and version
            dict.fromkeys(
                capability.name + (f"@{capability.version}" if capability.version else "")
                for capability in item.capabilities
            )
        )
        vendor = item.vendor.name if item.vendor and item.vendor.name else ""
        table.add_row(item.id, item.title or "", item.kind, vendor, item.version or "", capabilities)
    return table


def _facets_table(facets: Facets) -> Table:
    table = Table("facet", "value", "count", box=None, header_style="bold")
    for name in ("kind", "vendor", "capability"):
        for entry in getattr(facets, name):
            table.add_row(name, entry.value, str(entry.count))
    return table


@click.command()
@click.option("-q", "--query", "text", help='Free text (web search syntax: words, "phrases", -not, or), ranked.')
@click.option("--kind", type=click.Choice(KINDS), help="Only agents, tools or other things.")
@click.option("--vendor", help="Vendor name, any case.")
@click.option("--capability", help="Capability id or name.")
@click.option("--capability-version", help="Range the capability's version must satisfy, e.g. '^1.2' or '[1.0,2.0)'.")
@click.option("--type", "type_", help="An @type the description has, e.g. lmos:Agent.")
@click.option("--sort", type=click.Choice(SEARCH_SORTS), help="Default: relevance with --query, else title.")
@click.option("--limit", type=click.IntRange(min=1), help="Page size.")
@click.option("--cursor", help="Continue after the page that printed this cursor.")
@click.option("--facets", is_flag=True, help="Also count matches by kind, vendor and capability.")
@client_options
def search(
    text: str | None,
    kind: str | None,
    vendor: str | None,
    capability: str | None,
    capability_version: str | None,
    type_: str | None,
    sort: str | None,
    limit: int | None,
    cursor: str | None,
    facets: bool,
    url: str | None,
    as_json: bool,
) -> None:
    """Find agents and tools by text, kind, vendor, capability (and its version) and @type.

    Prints one page; when there are more, the command to continue is printed last.
    """
    with _client(url) as client:
        page = client.search(
            kind=kind,
            vendor=vendor,
            capability=capability,
            capability_version=capability_version,
            type_=type_,
            q=text,
            sort=sort,
            limit=limit,
            cursor=cursor,
            facets=facets,
        )
    if as_json:
        _print_json(page)
        return
    out.print(_search_table(page.items))
    if page.facets is not None:
        out.print(_facets_table(page.facets))
    if page.next_cursor:
        out.print(f"more: --cursor {page.next_cursor}", highlight=False)


@click.command()
@click.argument("thing_id")
@client_options
def summary(thing_id: str, url: str | None, as_json: bool) -> None:
    """Show what THING_ID offers: kind, vendor, version, capabilities and lint warnings."""
    with _client(url) as client:
        found = client.summary(thing_id)
    if as_json:
        _print_json(found)
        return
    vendor = found.vendor.name if found.vendor and found.vendor.name else "-"
    out.print(f"{found.id}  {found.title or ''}  ({found.kind}, vendor {vendor}, version {found.version or '-'})")
    table = Table("capability", "version", "source", "description", box=None, header_style="bold")
    for capability in found.capabilities:
        table.add_row(
            capability.id or capability.name, capability.version or "", capability.source, capability.description or ""
        )
    out.print(table)
    for warning in found.lint:
        out.print(f"  lint {warning.code} at {warning.field}: {warning.message}", highlight=False, markup=False)


@click.command()
@click.argument("thing_id")
@click.option("--satisfies", help="Only versions in this range, e.g. '^1.2'; the first printed is the newest match.")
@client_options
def versions(thing_id: str, satisfies: str | None, url: str | None, as_json: bool) -> None:
    """List the kept versions of THING_ID, newest first, with their compatibility verdicts."""
    with _client(url) as client:
        kept = client.versions(thing_id, satisfies=satisfies)
    if as_json:
        _print_json(kept)
        return
    table = Table("version", "registered", "current", "previous", "verdict", "honest", box=None, header_style="bold")
    for item in kept.items:
        honest = "" if item.honest is None else ("yes" if item.honest else "NO")
        table.add_row(
            item.version,
            item.registered.isoformat(timespec="seconds"),
            "*" if item.current else "",
            item.previous_version or "",
            item.verdict or "",
            honest,
        )
    out.print(table)


@click.command(name="compat")
@click.argument("thing_id")
@click.argument("from_version")
@click.argument("to_version")
@client_options
def compat(thing_id: str, from_version: str, to_version: str, url: str | None, as_json: bool) -> None:
    """Compare two kept versions of THING_ID: the verdict, the bump the changes need, and each change."""
    with _client(url) as client:
        report = client.compatibility(thing_id, from_version, to_version)
    if as_json:
        _print_json(report)
        return
    honesty = "" if report.honest is None else (" (honest)" if report.honest else " (DISHONEST version bump)")
    out.print(
        f"{report.from_} -> {report.to}: {report.verdict}; needs a {report.required_bump} bump, "
        f"declared {report.declared_bump or '-'}{honesty}",
        highlight=False,
    )
    for change in report.changes:
        mark = "breaking" if change.breaking else "ok"
        out.print(f"  [{mark}] {change.pointer}: {change.message}", highlight=False, markup=False)


@click.command()
@click.argument("query", required=False)
@click.option("--file", "query_file", type=click.File("r"), help="Read the query from a file ('-' for stdin).")
@click.option("--post", is_flag=True, help="Send the query with POST (long queries).")
@click.option(
    "--graph",
    "graph_type",
    metavar="MEDIA_TYPE",
    help="For CONSTRUCT/DESCRIBE: print the graph in this format (text/turtle, application/ld+json, ...).",
)
@client_options
def sparql(
    query: str | None, query_file: Any, post: bool, graph_type: str | None, url: str | None, as_json: bool
) -> None:
    """Run a SPARQL 1.1 query over all descriptions (read only).

    SELECT prints a table (--json: SPARQL JSON results), ASK prints true or false. Each description is the named
    graph of its id (the default graph is their union); the prefixes td, lmos, jsonschema, hctl, htv, wotsec, dct,
    discovery, rdf, rdfs and xsd are bound already. Example:

        registry sparql 'SELECT ?agent WHERE { ?agent a lmos:Agent }'
    """
    text = query_file.read() if query_file else query
    if not text:
        raise click.UsageError("give a QUERY or --file")
    with _client(url) as client:
        if graph_type:
            click.echo(client.sparql_graph(text, media_type=graph_type, post=post))
            return
        try:
            result = client.sparql(text, post=post)
        except UnexpectedResponse as error:
            raise ClientFailure(f"{error}; with this command use --graph text/turtle") from error
    if as_json:
        _print_json(result)
    elif result.boolean is not None:
        click.echo("true" if result.boolean else "false")
    else:
        table = Table(*result.variables, box=None, header_style="bold")
        for row in result.rows():
            table.add_row(*(row.get(name, "") for name in result.variables))
        out.print(table)


@click.command()
@click.argument("query")
@client_options
def jsonpath(query: str, url: str | None, as_json: bool) -> None:
    """Run a JSONPath (RFC 9535) QUERY over the array of all descriptions; print the matches as JSON.

    Example: registry jsonpath '$[?@.title == "Weather"].id'
    """
    with _client(url) as client:
        _print_json(client.jsonpath(query))


@click.command()
@click.argument("capability")
@click.option("--range", "version_range", default="*", show_default=True, help="Version range, e.g. '^1.2', '>=1 <2'.")
@click.option(
    "--strategy",
    type=click.Choice(["highest", "lowest", "closest"]),
    default="highest",
    show_default=True,
    help="Which version in range wins.",
)
@click.option("--closest-to", metavar="VERSION", help="The version --strategy closest aims at.")
@client_options
def resolve(
    capability: str, version_range: str, strategy: str, closest_to: str | None, url: str | None, as_json: bool
) -> None:
    """Choose the live provider of CAPABILITY (an id or a name) whose version fits --range.

    Exits 1 with the reason when no provider fits.
    """
    requirement = {"capability": capability, "range": version_range, "strategy": strategy}
    if closest_to is not None:
        requirement["closest_to"] = closest_to
    with _client(url) as client:
        result = client.resolve([requirement])
    resolution = result.results[0]
    if as_json:
        _print_json(result)
    elif resolution.provider is not None:
        chosen = resolution.provider
        out.print(
            f"{capability} {version_range}: {chosen.id} ({chosen.title or '-'}, version {chosen.version})",
            highlight=False,
        )
        for other in resolution.alternatives:
            out.print(f"  also {other.id} (version {other.version})", highlight=False)
    if not result.resolved:
        raise ClientFailure(f"unresolved ({resolution.reason}): {resolution.detail}")


@click.command()
@click.argument("thing_id")
@click.option("--format", "tool_format", type=click.Choice(TOOL_FORMATS), required=True, help="LLM tool format.")
@client_options
def export(thing_id: str, tool_format: str, url: str | None, as_json: bool) -> None:
    """Print THING_ID as LLM tool definitions (a tool: one definition; an agent: a list, one per action)."""
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


def _import_targets(directory: Path, tool_format: str | None) -> list[tuple[str, Any]]:
    """(name, JSON) of every file to import; with a tool format a file may hold a list of definitions."""
    targets: list[tuple[str, Any]] = []
    for path in sorted(path for path in directory.rglob("*") if path.is_file() and path.suffix in IMPORT_SUFFIXES):
        name = str(path.relative_to(directory))
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            targets.append((name, ClientFailure(f"not JSON: {error}")))
            continue
        if tool_format is not None and isinstance(loaded, list):
            targets.extend((f"{name}[{index}]", item) for index, item in enumerate(loaded))
        else:
            targets.append((name, loaded))
    return targets


@click.command(name="import")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--ttl", type=float, help="Lease length in seconds for every description.")
@click.option(
    "--format",
    "tool_format",
    type=click.Choice(TOOL_FORMATS),
    help="The files are LLM tool definitions in this format (one, or a list, per file), not Thing Descriptions.",
)
@click.option("--vendor", help="With --format: the vendor of the imported tools.")
@client_options
def import_directory(
    directory: Path, ttl: float | None, tool_format: str | None, vendor: str | None, url: str | None, as_json: bool
) -> None:
    """Register every *.json / *.jsonld file under DIRECTORY, then summarise what failed and why.

    Exits 1 when any file failed; the others are registered all the same.
    """
    if tool_format is None and vendor is not None:
        raise click.UsageError("--vendor needs --format (Thing Descriptions name their vendor themselves)")
    if tool_format is not None and ttl is not None:
        raise click.UsageError("--ttl applies to Thing Descriptions, not to imported tools")
    targets = _import_targets(directory, tool_format)
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
        task = progress.add_task("import", total=len(targets))
        for name, loaded in targets:
            try:
                if isinstance(loaded, ClientFailure):
                    raise loaded
                if tool_format is not None:
                    imported = client.import_tool(loaded, tool_format, vendor=vendor)
                    registered.append({"file": name, "id": imported.id, "created": imported.created})
                elif not isinstance(loaded, dict):
                    raise ClientFailure("holds JSON, but not an object (a Thing Description)")
                else:
                    result = client.register(loaded, ttl=ttl)
                    registered.append({"file": name, "id": result.id, "created": result.created})
            except ClientFailure as error:
                failed.append({"file": name, "status": None, "detail": error.message, "validationErrors": []})
            except ProblemError as error:
                issues = [msgspec.to_builtins(issue) for issue in error.validation_errors]
                failed.append(
                    {"file": name, "status": error.status, "detail": error.detail, "validationErrors": issues}
                )
            progress.advance(task)
    if as_json:
        _print_json({"registered": registered, "failed": failed})
    else:
        out.print(f"{len(registered)} registered, {len(failed)} failed (of {len(targets)})", highlight=False)
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
    summary,
    versions,
    compat,
    resolve,
    sparql,
    jsonpath,
    export,
    watch,
    import_directory,
)


def add_client_commands(group: click.Group) -> None:
    for command in COMMANDS:
        group.add_command(command)


__all__ = ["add_client_commands"]
