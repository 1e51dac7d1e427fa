"""Client verbs in process, against a stand-in client: how a parameter is named as the user typed it, what
``summary`` and ``sparql`` print."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import click
import msgspec
import pytest
from click.testing import CliRunner

from registry.cli import discovery, query
from registry.cli.common import RegistryGroup, typed_name
from registry.client import SparqlResults, ThingSummary, UnexpectedResponse


@click.group(cls=RegistryGroup)
def group() -> None:
    pass


@group.command()
@click.argument("words", nargs=-1)
@click.option("-k", "--kind")
@click.option("--type", "type_")
@click.option("--strict/--lax", default=None)
def verb(words: tuple[str, ...], kind: str | None, type_: str | None, strict: bool | None) -> None:
    for api_name in ("q", "kind", "type", "strict", "requirements[0].kind", "unknown"):
        click.echo(f"{api_name}={typed_name(api_name)}")


def _names(*args: str) -> dict[str, str]:
    result = CliRunner().invoke(group, ["verb", *args])
    assert result.exit_code == 0, result.output
    return dict(line.split("=", 1) for line in result.output.splitlines())


def test_a_parameter_is_named_as_the_user_typed_it() -> None:
    assert _names() == {
        "q": "WORDS",
        "kind": "--kind",
        "type": "--type",
        "strict": "--strict",
        "requirements[0].kind": "--kind",
        "unknown": "parameter unknown",
    }
    typed = _names("-kagent", "--type=x", "--lax", "w")
    assert (typed["kind"], typed["type"], typed["strict"], typed["requirements[0].kind"]) == (
        "-k",
        "--type",
        "--lax",
        "-k",
    )
    assert _names("-k", "agent")["kind"] == "-k"


def test_a_parameter_is_named_plainly_outside_a_command() -> None:
    assert typed_name("kind") == "parameter kind"


class _Client:
    """Answers as the directory would: ``answers`` maps a call to its answer (an exception is raised)."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, Any]] = []

    def _answer(self, call: str, detail: Any) -> Any:
        self.calls.append((call, detail))
        answer = self.answers[call]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def summary(self, thing_id: str) -> ThingSummary:
        return self._answer("summary", thing_id)  # type: ignore[no-any-return]

    def sparql(self, text: str, *, post: bool) -> SparqlResults:
        return self._answer("sparql", post)  # type: ignore[no-any-return]

    def sparql_graph(self, text: str, *, media_type: str, post: bool) -> str:
        return self._answer("sparql_graph", media_type)  # type: ignore[no-any-return]


def _run(monkeypatch: pytest.MonkeyPatch, module: Any, command: click.Command, args: list[str], client: _Client) -> Any:
    @contextlib.contextmanager
    def connect(url: str | None) -> Iterator[_Client]:
        yield client

    monkeypatch.setattr(module, "connect", connect)
    monkeypatch.setenv("COLUMNS", "200")
    return CliRunner().invoke(command, args)


SUMMARY = msgspec.convert(
    {
        "id": "urn:x:weather",
        "kind": "agent",
        "modified": dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        "title": "Weather",
        "vendor": {"name": "Acme"},
        "capabilities": [
            {"name": "forecast", "source": "lmos", "id": "urn:cap:forecast", "version": "1.2.0", "description": "F"},
            {"name": "alerts", "source": "action"},
        ],
        "lint": [{"code": "description-missing", "message": "say it", "field": "/actions/alerts"}],
    },
    ThingSummary,
)


def test_summary_prints_its_header_capabilities_and_lint(monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(monkeypatch, discovery, discovery.summary, ["urn:x:weather"], _Client({"summary": SUMMARY}))
    assert result.exit_code == 0, result.output
    lines = [line.rstrip() for line in result.output.splitlines()]
    assert lines[0] == "urn:x:weather  Weather  (agent, vendor Acme, version -)"
    assert lines[1].split() == ["capability", "version", "source", "description"]
    assert lines[2].split() == ["urn:cap:forecast", "1.2.0", "lmos", "F"]
    assert lines[3].split() == ["alerts", "action"]
    assert lines[4] == "  lint description-missing at /actions/alerts: say it"
    bare = msgspec.structs.replace(SUMMARY, title=None, vendor=None, version="2", capabilities=[], lint=[])
    result = _run(monkeypatch, discovery, discovery.summary, ["urn:x:weather"], _Client({"summary": bare}))
    assert result.output.splitlines()[0] == "urn:x:weather    (agent, vendor -, version 2)"


SELECT = msgspec.convert(
    {"head": {"vars": ["a", "b"]}, "results": {"bindings": [{"a": {"type": "literal", "value": "1"}}]}},
    SparqlResults,
)
ASK = msgspec.convert({"head": {"vars": []}, "boolean": False}, SparqlResults)
GRAPH = '{"@id": "urn:x"}'


@pytest.mark.parametrize(
    ("args", "answers", "exit_code", "output", "calls"),
    [
        (["Q"], {"sparql": SELECT}, 0, ["a b", "1"], [("sparql", False)]),
        (["Q", "--post"], {"sparql": ASK}, 0, ["false"], [("sparql", True)]),
        (["Q", "--json"], {"sparql": ASK}, 0, {"head": {}, "boolean": False}, [("sparql", False)]),
        (["Q", "--graph", "text/turtle"], {"sparql_graph": "<a> <b> <c> ."}, 0, ["<a> <b> <c> ."], None),
        (["Q", "--json", "--graph", "application/ld+json"], {"sparql_graph": GRAPH}, 0, {"@id": "urn:x"}, None),
        (
            ["Q", "--json"],
            {"sparql": UnexpectedResponse("a graph"), "sparql_graph": GRAPH},
            0,
            {"@id": "urn:x"},
            [("sparql", False), ("sparql_graph", "application/ld+json")],
        ),
        (
            ["Q"],
            {"sparql": UnexpectedResponse("a graph")},
            1,
            ["Error: a graph; with this command use --graph text/turtle"],
            [("sparql", False)],
        ),
        ([], {}, 2, None, []),
        (["Q", "--json", "--graph", "text/turtle"], {}, 2, None, []),
    ],
)
def test_sparql_prints_results_answers_and_graphs(
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    answers: dict[str, Any],
    exit_code: int,
    output: list[str] | dict[str, Any] | None,
    calls: list[tuple[str, Any]] | None,
) -> None:
    client = _Client(answers)
    result = _run(monkeypatch, query, query.sparql, args, client)
    assert result.exit_code == exit_code, result.output
    if isinstance(output, dict):
        assert json.loads(result.output) == output
    elif output is not None:
        assert [" ".join(line.split()) for line in result.output.splitlines() if line.strip()] == output
    if calls is not None:
        assert client.calls == calls
