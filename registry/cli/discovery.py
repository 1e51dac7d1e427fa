"""Discovery verbs: search, summary, versions, compat, resolve, export."""

from __future__ import annotations

import click
from rich.table import Table

from registry.cli.common import (
    ClientFailure,
    client_options,
    connect,
    id_column,
    out,
    print_ids,
    print_json,
    print_table,
)
from registry.client import (
    EXPORT_FORMATS,
    KINDS,
    SEARCH_SORTS,
    VENDOR_MATCHES,
    Capability,
    ExportFormat,
    Facets,
    Found,
    Kind,
    SearchItem,
    SearchSort,
    ThingSummary,
    VendorMatch,
)


def _search_table(items: list[SearchItem]) -> Table:
    table = Table(
        id_column(item.id for item in items),
        "title",
        "kind",
        "vendor",
        "version",
        "capabilities",
        box=None,
        header_style="bold",
    )
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
@click.argument("words", nargs=-1)
@click.option("-q", "--query", "text", help='Free text (web search syntax: words, "phrases", -not, or), ranked.')
@click.option("--kind", type=click.Choice(KINDS), help="Only agents, tools or other things.")
@click.option("--vendor", help="Vendor name, any case: its words or word prefixes (see --vendor-match).")
@click.option("--vendor-match", type=click.Choice(VENDOR_MATCHES), help="How --vendor matches (default: words).")
@click.option("--capability", help="Capability id or name.")
@click.option("--capability-version", help="Range the capability's version must satisfy, e.g. '^1.2' or '[1.0,2.0)'.")
@click.option("--type", "type_", help="An @type the description has, e.g. lmos:Agent.")
@click.option("--sort", type=click.Choice(SEARCH_SORTS), help="Default: relevance with --query, else title.")
@click.option("--limit", type=click.IntRange(min=1), help="Page size.")
@click.option("--cursor", help="Continue after the page that printed this cursor.")
@click.option("--facets", is_flag=True, help="Also count matches by kind, vendor and capability.")
@click.option("--ids-only", is_flag=True, help="Print only the ids, one a line (for scripts and pipes).")
@client_options
def search(
    words: tuple[str, ...],
    text: str | None,
    kind: Kind | None,
    vendor: str | None,
    vendor_match: VendorMatch | None,
    capability: str | None,
    capability_version: str | None,
    type_: str | None,
    sort: SearchSort | None,
    limit: int | None,
    cursor: str | None,
    facets: bool,
    ids_only: bool,
    url: str | None,
    as_json: bool,
) -> None:
    """Find agents and tools by free text (WORDS, or -q) and by kind, vendor, capability (and its version), @type.

    Prints one page; when there are more, the command to continue is printed last.
    """
    if words and text is not None:
        raise click.UsageError("Give the search text either as WORDS or with -q/--query, not both.")
    text = " ".join(words) if words else text
    with connect(url) as client:
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
            vendor_match=vendor_match,
        )
    if as_json:
        print_json(page)
        return
    if ids_only:
        print_ids(item.id for item in page.items)
        return
    print_table(_search_table(page.items))
    if page.facets is not None:
        print_table(_facets_table(page.facets))
    if page.next_cursor:
        out.print(f"more: --cursor {page.next_cursor}", highlight=False)


def _find_table(items: list[Found]) -> Table:
    table = Table(
        "rank",
        "title",
        "kind",
        "score",
        "match",
        "matched capability",
        id_column(item.id for item in items),
        box=None,
        header_style="bold",
    )
    for rank, item in enumerate(items, start=1):
        matched = ", ".join(dict.fromkeys(entry.name or entry.id or "" for entry in item.matched))
        score = "" if item.score is None else f"{item.score:.2f}"
        table.add_row(str(rank), item.title or "", item.kind, score, item.match or "", matched, item.id)
    return table


@click.command()
@click.argument("need", nargs=-1, required=True)
@click.option("--kind", type=click.Choice(KINDS), help="Only agents, tools or other things.")
@click.option("--vendor", help="Only this vendor's (words or word prefixes of its name, any case).")
@click.option("--capability", help="Only descriptions offering this capability (id or name).")
@click.option("--version", help="Range the capability's version must satisfy, e.g. '^1.2' (needs --capability).")
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True, help="Most hits.")
@client_options
def find(
    need: tuple[str, ...],
    kind: Kind | None,
    vendor: str | None,
    capability: str | None,
    version: str | None,
    limit: int,
    url: str | None,
    as_json: bool,
) -> None:
    """Find agents and tools by a NEED in plain words, best first: their score, match quality (strong: a fit;
    weak: maybe nothing fits) and the capability that matched.

    Example: registry find "tomorrow's weather in Berlin" --kind agent
    """
    if version is not None and capability is None:
        raise click.UsageError("--version needs --capability (the capability whose version is constrained).")
    with connect(url) as client:
        found = client.find(
            " ".join(need), kind=kind, vendor=vendor, capability=capability, version=version, limit=limit
        )
    if as_json:
        print_json(found)
        return
    print_table(_find_table(found.items))
    if not found.items:
        out.print("nothing found", highlight=False)
    elif found.retrieval:
        out.print(f"retrieval: {found.retrieval}", highlight=False)


def _summary_line(found: ThingSummary) -> str:
    """The id, title, kind, vendor and version of a description, ``-`` for what it does not state."""
    vendor = found.vendor.name if found.vendor and found.vendor.name else "-"
    return f"{found.id}  {found.title or ''}  ({found.kind}, vendor {vendor}, version {found.version or '-'})"


def _capabilities_table(capabilities: list[Capability]) -> Table:
    table = Table("capability", "version", "source", "description", box=None, header_style="bold")
    for capability in capabilities:
        table.add_row(
            capability.id or capability.name, capability.version or "", capability.source, capability.description or ""
        )
    return table


@click.command()
@click.argument("thing_id")
@client_options
def summary(thing_id: str, url: str | None, as_json: bool) -> None:
    """Show what THING_ID offers: kind, vendor, version, capabilities and lint warnings."""
    with connect(url) as client:
        found = client.summary(thing_id)
    if as_json:
        print_json(found)
        return
    out.print(_summary_line(found))
    print_table(_capabilities_table(found.capabilities))
    for warning in found.lint:
        out.print(f"  lint {warning.code} at {warning.field}: {warning.message}", highlight=False, markup=False)


@click.command()
@click.argument("thing_id")
@click.option("--satisfies", help="Only versions in this range, e.g. '^1.2'; the first printed is the newest match.")
@client_options
def versions(thing_id: str, satisfies: str | None, url: str | None, as_json: bool) -> None:
    """List the kept versions of THING_ID, newest first, with their compatibility verdicts."""
    with connect(url) as client:
        kept = client.versions(thing_id, satisfies=satisfies)
    if as_json:
        print_json(kept)
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
    print_table(table)


@click.command(name="compat")
@click.argument("thing_id")
@click.argument("from_version")
@click.argument("to_version")
@client_options
def compat(thing_id: str, from_version: str, to_version: str, url: str | None, as_json: bool) -> None:
    """Compare two kept versions of THING_ID: the verdict, the bump the changes need, and each change."""
    with connect(url) as client:
        report = client.compatibility(thing_id, from_version, to_version)
    if as_json:
        print_json(report)
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
    with connect(url) as client:
        result = client.resolve([requirement])
    resolution = result.results[0]
    if as_json:
        print_json(result)
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
@click.option(
    "--format", "tool_format", type=click.Choice(EXPORT_FORMATS), required=True, help="LLM tool format, or a2a."
)
@client_options
def export(thing_id: str, tool_format: ExportFormat, url: str | None, as_json: bool) -> None:
    """Print THING_ID as LLM tool definitions (a tool: one definition; an agent: a list, one per action), or an
    agent as its A2A Agent Card (a2a)."""
    with connect(url) as client:
        print_json(client.export(thing_id, tool_format))


COMMANDS = (
    search,
    find,
    summary,
    versions,
    compat,
    resolve,
    export,
)
