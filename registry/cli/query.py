"""Search verbs of WoT Discovery: sparql, jsonpath."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.table import Table

from registry.cli.common import (
    ClientFailure,
    client_options,
    connect,
    print_json,
    print_table,
)
from registry.cli.literal import literal
from registry.client import (
    GRAPH_MEDIA_TYPES,
    GraphMediaType,
    RegistryClient,
    SparqlResults,
    UnexpectedResponse,
)

#: The graph serialisation ``--json`` prints.
JSON_LD: GraphMediaType = "application/ld+json"


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

    SELECT prints a table (--json: SPARQL JSON results), ASK prints true or false, CONSTRUCT and DESCRIBE print
    the graph as --graph says (--json: JSON-LD). Each description is the named graph of its id (the default graph
    is their union); the prefixes td, lmos, jsonschema, hctl, htv, wotsec, dct, discovery, rdf, rdfs and xsd are
    bound already. Example:

        registry sparql 'SELECT ?agent WHERE { ?agent a lmos:Agent }'
    """
    text = query_file.read() if query_file else query
    if not text:
        raise click.UsageError("give a QUERY or --file")
    if as_json and graph_type not in (None, JSON_LD):
        raise click.UsageError(f"--json prints a graph as JSON-LD: leave out --graph or give --graph {JSON_LD}")
    with connect(url) as client:
        if graph_type is not None and not as_json:
            click.echo(literal(client.sparql_graph(text, media_type=graph_type, post=post)))
            return
        result = None if graph_type is not None else _results(client, text, post=post, as_json=as_json)
        if result is None:  # a graph, printed as JSON-LD
            print_json(json.loads(client.sparql_graph(text, media_type=JSON_LD, post=post)))
            return
    _print_results(result, as_json=as_json)


def _results(client: RegistryClient, text: str, *, post: bool, as_json: bool) -> SparqlResults | None:
    """The results of a SELECT or ASK query; None for a CONSTRUCT or DESCRIBE query, which only --json prints
    without --graph (as JSON-LD)."""
    try:
        return client.sparql(text, post=post)
    except UnexpectedResponse as error:  # a CONSTRUCT or DESCRIBE query
        if not as_json:
            raise ClientFailure(f"{error}; with this command use --graph text/turtle") from error
        return None


def _print_results(result: SparqlResults, *, as_json: bool) -> None:
    """SPARQL JSON results with --json; else an ASK query's answer, or a SELECT query's rows as a table."""
    if as_json:
        print_json(result)
    elif result.boolean is not None:
        click.echo("true" if result.boolean else "false")
    else:
        table = Table(*result.variables, box=None, header_style="bold")
        for row in result.rows():
            table.add_row(*(row.get(name, "") for name in result.variables))
        print_table(table)


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
