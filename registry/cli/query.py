"""Search verbs of WoT Discovery: sparql, jsonpath."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from registry.cli.common import (
    ClientFailure,
    client_options,
    connect,
    out,
    print_json,
)
from registry.cli.literal import literal
from registry.client import (
    GRAPH_MEDIA_TYPES,
    GraphMediaType,
    UnexpectedResponse,
)


@click.command()
@click.argument("query", required=False)
@click.option("--file", "query_file", type=click.File("r"), help="Read the query from a file ('-' for stdin).")
@click.option("--post", is_flag=True, help="Send the query with POST (long queries).")
@click.option(
    "--graph",
    "graph_type",
    type=click.Choice(GRAPH_MEDIA_TYPES),
    help="For CONSTRUCT/DESCRIBE: print the graph in this format.",
)
@client_options
def sparql(
    query: str | None, query_file: Any, post: bool, graph_type: GraphMediaType | None, url: str | None, as_json: bool
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
    with connect(url) as client:
        if graph_type:
            click.echo(literal(client.sparql_graph(text, media_type=graph_type, post=post)))
            return
        try:
            result = client.sparql(text, post=post)
        except UnexpectedResponse as error:
            raise ClientFailure(f"{error}; with this command use --graph text/turtle") from error
    if as_json:
        print_json(result)
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
    with connect(url) as client:
        print_json(client.jsonpath(query))


COMMANDS = (
    sparql,
    jsonpath,
)
