"""Verbs on descriptions: register, get, list, delete, lease, import."""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
import msgspec
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from registry.cli.common import (
    IMPORT_SUFFIXES,
    ClientFailure,
    client_options,
    connect,
    err,
    id_column,
    kind_of,
    out,
    print_ids,
    print_json,
    print_table,
    read_document,
)
from registry.cli.literal import literal_lines
from registry.client import (
    TOOL_FORMATS,
    ProblemError,
    RegistryClient,
    ToolFormat,
)
from registry.wire import MAX_BATCH


def _things_table(documents: list[Any]) -> Table:
    ids = [str(document.get("id", "")) if isinstance(document, dict) else str(document) for document in documents]
    table = Table(id_column(ids), "title", "kind", "expires", box=None, header_style="bold")
    for document in documents:
        if not isinstance(document, dict):
            table.add_row(str(document), "", "", "")
            continue
        registration = document.get("registration") or {}
        table.add_row(
            str(document.get("id", "")),
            str(document.get("title", "")),
            str(document.get("kind") or kind_of(document)),
            str(registration.get("expires", "") if isinstance(registration, dict) else ""),
        )
    return table


@click.command()
@click.argument("file", type=click.Path(allow_dash=True))
@click.option("--ttl", type=float, help="Lease length in seconds (sets registration.ttl).")
@client_options
def register(file: str, ttl: float | None, url: str | None, as_json: bool) -> None:
    """Register (or replace) the Thing Description in FILE ('-' for stdin)."""
    document = read_document(file)
    with connect(url) as client:
        result = client.register(document, ttl=ttl)
    if as_json:
        print_json(result)
        return
    out.print(f"{'created' if result.created else 'updated'} {result.id} (etag {result.etag})", highlight=False)
    for notice in result.notices:
        out.print(f"  notice {notice.code}: {notice.message}", highlight=False, markup=False)


@click.command()
@click.argument("thing_id")
@client_options
def get(thing_id: str, url: str | None, as_json: bool) -> None:
    """Print the (enriched) Thing Description THING_ID."""
    with connect(url) as client:
        print_json(client.get(thing_id))


@click.command(name="list")
@click.option("--offset", type=click.IntRange(min=0))
@click.option("--limit", type=click.IntRange(min=1))
@click.option("--ids-only", is_flag=True, help="Print only the ids, one a line (for scripts and pipes).")
@client_options
def list_things(offset: int | None, limit: int | None, ids_only: bool, url: str | None, as_json: bool) -> None:
    """List the registered descriptions."""
    with connect(url) as client:
        documents = client.list(offset=offset, limit=limit)
    if as_json:
        print_json(documents)
    elif ids_only:
        print_ids(str(document.get("id", "")) for document in documents if isinstance(document, dict))
    else:
        print_table(_things_table(documents))


@click.command()
@click.argument("thing_id")
@client_options
def delete(thing_id: str, url: str | None, as_json: bool) -> None:
    """Deregister THING_ID."""
    with connect(url) as client:
        client.delete(thing_id)
    if as_json:
        print_json({"id": thing_id, "deleted": True})
    else:
        out.print(f"deleted {thing_id}", highlight=False)


@click.command()
@click.argument("thing_id")
@client_options
def lease(thing_id: str, url: str | None, as_json: bool) -> None:
    """Renew the lease of THING_ID (expires = now + its ttl)."""
    with connect(url) as client:
        renewed = client.renew_lease(thing_id)
    if as_json:
        print_json(renewed)
    else:
        out.print(f"{renewed.id} leased until {renewed.expires}", highlight=False)


def _is_agent_card(document: dict[str, Any]) -> bool:
    """An A2A Agent Card rather than a TD: skills and an A2A endpoint, no JSON-LD context."""
    endpoint = "supportedInterfaces" in document or "url" in document
    return "@context" not in document and "skills" in document and endpoint


def _import_files(directory: Path) -> list[Path]:
    return sorted(path for path in directory.rglob("*") if path.is_file() and path.suffix in IMPORT_SUFFIXES)


def _loaded(directory: Path, paths: list[Path], tool_format: ToolFormat | None) -> list[tuple[str, Any]]:
    """(name, JSON) of each file of ``paths``; with a tool format a file may hold a list of definitions."""
    targets: list[tuple[str, Any]] = []
    for path in paths:
        name = str(path.relative_to(directory))
        try:
            loaded = msgspec.json.decode(path.read_bytes())
        except (OSError, UnicodeDecodeError, msgspec.DecodeError) as error:  # msgspec: bad UTF-8 in a string
            targets.append((name, ClientFailure(f"not JSON: {error}")))
            continue
        if tool_format is not None and isinstance(loaded, list):
            targets.extend((f"{name}[{index}]", item) for index, item in enumerate(loaded))
        else:
            targets.append((name, loaded))
    return targets


class RateColumn(ProgressColumn):
    """Descriptions per second so far."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.speed or 0:,.0f}/s")


def _register(
    client: RegistryClient, loaded: Any, tool_format: ToolFormat | None, vendor: str | None, ttl: float | None
) -> dict[str, Any]:
    """Register one loaded file (a tool definition, an A2A Agent Card or a Thing Description): its id and whether
    it was created."""
    if isinstance(loaded, ClientFailure):
        raise loaded
    if tool_format is not None:
        imported = client.import_tool(loaded, tool_format, vendor=vendor)
        return {"id": imported.id, "created": imported.created}
    if not isinstance(loaded, dict):
        raise ClientFailure("holds JSON, but not an object (a Thing Description)")
    if _is_agent_card(loaded):
        card = client.import_card(loaded)
        return {"id": card.id, "created": card.created}
    result = client.register(loaded, ttl=ttl)
    return {"id": result.id, "created": result.created}


#: Seconds a request of ``registry import`` may take: a batch is up to 1,000 registrations' work.
IMPORT_TIMEOUT = 300.0


def _batched(loaded: Any, tool_format: str | None) -> bool:
    """Whether a loaded file goes in a batch: a Thing Description with its id (the rest is sent one by one)."""
    if tool_format is not None or not isinstance(loaded, dict) or _is_agent_card(loaded):
        return False
    thing_id = loaded.get("id")
    return isinstance(thing_id, str) and bool(thing_id)


def _failure(name: str, error: ProblemError) -> dict[str, Any]:
    issues = [msgspec.to_builtins(issue) for issue in error.validation_errors]
    return {"file": name, "status": error.status, "detail": error.detail, "validationErrors": issues}


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
@click.option(
    "--concurrency",
    type=click.IntRange(1, 256),
    default=16,
    show_default=True,
    help="Requests in flight at once (the directory validates and projects them in parallel).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, MAX_BATCH),
    default=100,
    show_default=True,
    help="Files read at a time; the Thing Descriptions with an id among them go in one request "
    "(POST /api/v1/things/batch, one transaction each); 1 sends one PUT each.",
)
@client_options
def import_directory(
    directory: Path,
    ttl: float | None,
    tool_format: ToolFormat | None,
    vendor: str | None,
    concurrency: int,
    batch_size: int,
    url: str | None,
    as_json: bool,
) -> None:
    """Register every *.json / *.jsonld file under DIRECTORY, then summarise what failed and why.

    The files are read --batch-size at a time, and the Thing Descriptions with an id among them go in one request
    and one transaction (each description validated and projected as a PUT of it would be); A2A Agent Cards
    among the files are imported as lmos:Agent descriptions, one by one.

    Exits 1 when any file failed; the others are registered all the same.
    """
    if tool_format is None and vendor is not None:
        raise click.UsageError("--vendor needs --format (Thing Descriptions name their vendor themselves)")
    if tool_format is not None and ttl is not None:
        raise click.UsageError("--ttl applies to Thing Descriptions, not to imported tools")
    files = _import_files(directory)
    progress = Progress(
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=as_json,
    )
    started = time.monotonic()
    with connect(url, timeout=IMPORT_TIMEOUT) as client, progress, ThreadPoolExecutor(concurrency) as pool:
        run = _Import(client, pool, progress, directory, tool_format, vendor, ttl, batch_size, found=len(files))
        reads = [
            pool.submit(run.import_files, files[start : start + batch_size])
            for start in range(0, len(files), batch_size)
        ]
        for future in reads:
            future.result()
        for future in run.one_by_one:  # complete: each read queued its own before it ended
            future.result()
    elapsed = time.monotonic() - started
    run.registered.sort(key=lambda entry: entry["file"])
    run.failed.sort(key=lambda entry: entry["file"])
    if as_json:
        print_json({"registered": run.registered, "failed": run.failed})
    else:
        _print_import(run.registered, run.failed, run.found, elapsed)
    if run.failed:
        sys.exit(1)


class _Import:
    """One ``registry import``: reads the files a batch at a time in the pool, sends the Thing Descriptions with
    an id among them in one request and the rest one by one, and records what was registered and what failed."""

    def __init__(
        self,
        client: RegistryClient,
        pool: ThreadPoolExecutor,
        progress: Progress,
        directory: Path,
        tool_format: ToolFormat | None,
        vendor: str | None,
        ttl: float | None,
        batch_size: int,
        *,
        found: int,
    ) -> None:
        self.client, self.pool, self.progress = client, pool, progress
        self.directory, self.tool_format, self.vendor, self.ttl = directory, tool_format, vendor, ttl
        self.batch_size = batch_size
        #: Files found; a file of tool definitions may hold several, counted as each is read.
        self.found = found
        self.task = progress.add_task("import", total=found)
        self.registered: list[dict[str, Any]] = []
        self.failed: list[dict[str, Any]] = []
        self.one_by_one: list[Future[None]] = []
        self._counting = threading.Lock()

    def import_files(self, paths: list[Path]) -> None:
        """Read a batch's worth of files (in the pool, while other batches are on the wire, so that a large
        directory does not wait for every file to be read first), send those that go in a batch, and queue the
        others."""
        targets = _loaded(self.directory, paths, self.tool_format)
        if len(targets) != len(paths):
            with self._counting:
                self.found += len(targets) - len(paths)
                self.progress.update(self.task, total=self.found)
        batched: list[tuple[str, Any]] = []
        queued: list[Future[None]] = []
        for name, loaded in targets:
            if self.batch_size > 1 and _batched(loaded, self.tool_format):
                batched.append((name, loaded))
            else:
                queued.append(self.pool.submit(self.register_one, name, loaded))
        self.one_by_one.extend(queued)
        if batched:
            self.register_batch(batched)

    def register_one(self, name: str, loaded: Any) -> None:
        try:
            registered = _register(self.client, loaded, self.tool_format, self.vendor, self.ttl)
            self.registered.append({"file": name, **registered})
        except ClientFailure as error:
            self.failed.append({"file": name, "status": None, "detail": error.message, "validationErrors": []})
        except ProblemError as error:
            self.failed.append(_failure(name, error))
        self.progress.advance(self.task)

    def register_batch(self, batch: list[tuple[str, Any]]) -> None:
        try:
            outcome = self.client.register_batch([loaded for _, loaded in batch], ttl=self.ttl)
        except ProblemError as error:
            self.failed.extend(_failure(name, error) for name, _ in batch)
        else:
            for (name, _), item in zip(batch, outcome.results, strict=True):
                if item.problem is None:
                    self.registered.append({"file": name, "id": item.id, "created": item.status == 201})
                else:
                    issues = [msgspec.to_builtins(issue) for issue in item.problem.validationErrors or []]
                    self.failed.append(
                        {"file": name, "status": item.status, "detail": item.problem.detail, "validationErrors": issues}
                    )
        self.progress.advance(self.task, len(batch))


def _print_import(registered: list[dict[str, Any]], failed: list[dict[str, Any]], found: int, elapsed: float) -> None:
    """The summary of an import: counts and rate, then a table of the files that failed and why."""
    rate = found / elapsed if elapsed > 0 else 0.0
    out.print(
        f"{len(registered)} registered, {len(failed)} failed (of {found}) in {elapsed:.1f} s, "
        f"{rate:,.0f} descriptions/s",
        highlight=False,
    )
    if failed:
        table = Table("file", "status", "why", box=None, header_style="bold")
        for failure in failed:
            reasons = [failure["detail"]] + [
                f"{issue['field'] or '(document)'}: {issue['description']}" for issue in failure["validationErrors"]
            ]
            table.add_row(failure["file"], str(failure["status"] or "-"), literal_lines(reasons))
        print_table(table)


COMMANDS = (
    register,
    get,
    list_things,
    delete,
    lease,
    import_directory,
)
