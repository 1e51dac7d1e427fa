"""The discovery verbs of the ``registry`` command, run as ``python -m registry VERB --url …`` against a real
server: tables for people, parseable ``--json``, and a non-zero exit with the problem's detail on errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from registry.cli import main
from registry.client import RegistryClient
from tests.support.things import thing
from tests.support.zygote import run_registry

ROOT = Path(__file__).resolve().parents[2]
TOKEN = uuid.uuid4().hex[:8]
VENDOR = f"Cli {TOKEN}"
CAPABILITY = f"urn:{TOKEN}:capability:translate"
AGENT = f"urn:{TOKEN}:agent:translator"
TOOL = {
    "type": "function",
    "function": {
        "name": f"translate_{TOKEN}",
        "description": "Translate a text",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text"}},
            "required": ["text"],
        },
    },
}


def registry(base_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_registry([*args, "--url", base_url], cwd=ROOT, env={**os.environ, "COLUMNS": "250"})


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def translator(version: str) -> dict[str, Any]:
    return thing(
        f"Translator {TOKEN}",
        **{
            "@type": "lmos:Agent",
            "id": AGENT,
            "version": {"instance": version},
            "lmos:metadata": {"lmos:vendor": {"lmos:name": VENDOR}},
            "lmos:capabilities": [{"id": CAPABILITY, "name": "translate", "version": version}],
            "actions": {
                "translate": {
                    "description": "Translate",
                    "input": {"type": "object", "properties": {"text": {"type": "string", "description": "Text"}}},
                    "forms": [{"href": "https://agents.example/translate", "op": "invokeaction"}],
                }
            },
        },
    )


@pytest.fixture(scope="module")
def corpus(base_url: str) -> None:
    with RegistryClient(base_url) as client:
        client.register(translator("1.0.0"))
        client.register(translator("2.0.0"))


def test_search_table_json_and_problem(base_url: str, corpus: None) -> None:
    table = registry(base_url, "search", "--vendor", VENDOR, "--capability", CAPABILITY, "--facets")
    assert table.returncode == 0, table.stderr
    assert AGENT in table.stdout
    assert "translate@2.0.0" in table.stdout
    assert VENDOR in table.stdout
    page = as_json(registry(base_url, "search", "-q", f"Translator {TOKEN}", "--json", "--facets"))
    assert [item["id"] for item in page["items"]] == [AGENT]
    assert page["facets"]["vendor"] == [{"value": VENDOR, "count": 1}]
    bad = registry(base_url, "search", "--capability-version", "^1")
    assert bad.returncode == 1
    assert "400 Bad Request" in bad.stderr
    assert "capability_version needs capability" in bad.stderr


def test_find_table_and_json(base_url: str, corpus: None) -> None:
    table = registry(base_url, "find", f"Translator {TOKEN}", "--kind", "agent")
    assert table.returncode == 0, table.stderr
    header, first, *_ = table.stdout.splitlines()
    assert header.split()[:5] == ["rank", "title", "kind", "score", "match"]
    assert first.split()[0] == "1"
    assert AGENT in first
    found = as_json(registry(base_url, "find", f"Translator {TOKEN}", "--capability", CAPABILITY, "--json"))
    assert found["items"][0]["id"] == AGENT
    assert isinstance(found["items"][0]["score"], float)
    nothing = registry(base_url, "find", f"zzz{TOKEN}qqq", "--kind", "tool", "--vendor", VENDOR)
    assert nothing.returncode == 0, nothing.stderr
    assert "nothing found" in nothing.stdout
    lonely = registry(base_url, "find", "translate", "--version", "^1")
    assert lonely.returncode == 2
    assert "--version needs --capability" in lonely.stderr


def test_summary_versions_and_compat(base_url: str, corpus: None) -> None:
    summary = registry(base_url, "summary", AGENT)
    assert summary.returncode == 0, summary.stderr
    assert CAPABILITY in summary.stdout
    assert as_json(registry(base_url, "summary", AGENT, "--json"))["version"] == "2.0.0"
    versions = as_json(registry(base_url, "versions", AGENT, "--satisfies", "^1", "--json"))
    assert [item["version"] for item in versions["items"]] == ["1.0.0"]
    assert "2.0.0" in registry(base_url, "versions", AGENT).stdout
    report = as_json(registry(base_url, "compat", AGENT, "1.0.0", "2.0.0", "--json"))
    assert (report["from"], report["to"], report["declared_bump"]) == ("1.0.0", "2.0.0", "major")
    assert "1.0.0 -> 2.0.0" in registry(base_url, "compat", AGENT, "1.0.0", "2.0.0").stdout
    missing = registry(base_url, "versions", f"urn:{TOKEN}:nothing")
    assert missing.returncode == 1
    assert "404 Not Found" in missing.stderr


def test_resolve(base_url: str, corpus: None) -> None:
    human = registry(base_url, "resolve", CAPABILITY, "--range", "^2")
    assert human.returncode == 0, human.stderr
    assert f"{AGENT} (Translator {TOKEN}, version 2.0.0)" in human.stdout
    result = as_json(registry(base_url, "resolve", "translate", "--strategy", "lowest", "--json"))
    assert result["resolved"] is True
    assert result["results"][0]["provider"]["capability"] == "translate"

    # Only current descriptions provide: 1.0.0 is a kept version, not a live provider.
    unresolved = registry(base_url, "resolve", CAPABILITY, "--range", "^1", "--json")
    assert unresolved.returncode == 1
    assert json.loads(unresolved.stdout)["results"][0]["reason"] == "no_version_in_range"
    assert "unresolved (no_version_in_range)" in unresolved.stderr

    bad = registry(base_url, "resolve", CAPABILITY, "--range", "one or two")
    assert bad.returncode == 1
    assert "400 Bad Request" in bad.stderr


def test_sparql_and_jsonpath(base_url: str, corpus: None) -> None:
    select = f"SELECT ?name WHERE {{ GRAPH <{AGENT}> {{ ?a td:hasActionAffordance/td:name ?name }} }}"
    table = registry(base_url, "sparql", select)
    assert table.returncode == 0, table.stderr
    assert "translate" in table.stdout
    results = as_json(registry(base_url, "sparql", select, "--post", "--json"))
    assert results["results"]["bindings"] == [{"name": {"type": "literal", "value": "translate"}}]
    assert registry(base_url, "sparql", f"ASK {{ GRAPH <{AGENT}> {{ ?s ?p ?o }} }}").stdout.strip() == "true"
    construct = f"CONSTRUCT {{ ?a td:title ?t }} WHERE {{ GRAPH <{AGENT}> {{ ?a td:title ?t }} }}"
    graph = registry(base_url, "sparql", construct, "--graph", "text/turtle")
    assert f"Translator {TOKEN}" in graph.stdout
    needs_graph = registry(base_url, "sparql", construct)
    assert needs_graph.returncode == 1
    assert "--graph" in needs_graph.stderr
    broken = registry(base_url, "sparql", "SELECT ?x WHERE {")
    assert broken.returncode == 1
    assert "400 Bad Request" in broken.stderr
    assert "at line 1, column" in broken.stderr

    assert as_json(registry(base_url, "jsonpath", f'$[?@.id == "{AGENT}"].version.instance')) == ["2.0.0"]
    assert registry(base_url, "jsonpath", "$[?").returncode == 1


def test_export(base_url: str, corpus: None) -> None:
    (tool,) = as_json(registry(base_url, "export", AGENT, "--format", "anthropic"))
    assert tool["name"] == "translate"
    missing = registry(base_url, "export", f"urn:{TOKEN}:nothing", "--format", "openai")
    assert missing.returncode == 1
    assert f"urn:{TOKEN}:nothing" in missing.stderr
    unknown = registry(base_url, "export", AGENT, "--format", "yaml")
    assert unknown.returncode == 2
    assert "yaml" in unknown.stderr


def test_import_tools_from_a_directory_with_a_failure(base_url: str, tmp_path: Path) -> None:
    (tmp_path / "translate.json").write_text(json.dumps(TOOL))
    second = {**TOOL, "function": {**TOOL["function"], "name": f"detect_{TOKEN}"}}  # type: ignore[dict-item]
    (tmp_path / "more.json").write_text(json.dumps([second]))
    (tmp_path / "broken.json").write_text(json.dumps({"type": "function", "function": {"description": "no name"}}))

    result = registry(base_url, "import", str(tmp_path), "--format", "openai", "--vendor", VENDOR, "--json")
    assert result.returncode == 1
    summary = json.loads(result.stdout)
    assert sorted(item["file"] for item in summary["registered"]) == ["more.json[0]", "translate.json"]
    (failure,) = summary["failed"]
    assert (failure["file"], failure["status"]) == ("broken.json", 400)
    assert "name" in failure["detail"]
    assert failure["validationErrors"]

    human = registry(base_url, "import", str(tmp_path), "--format", "openai", "--vendor", VENDOR)
    assert human.returncode == 1
    assert "2 registered, 1 failed (of 3)" in human.stdout
    assert "broken.json" in human.stdout
    assert "Not a openai tool" in human.stdout

    exported = as_json(registry(base_url, "export", summary["registered"][0]["id"], "--format", "openai"))
    assert exported["function"]["name"] in {f"translate_{TOKEN}", f"detect_{TOKEN}"}


def test_every_verb_explains_itself() -> None:
    top = subprocess.run(
        [sys.executable, "-m", "registry", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert top.returncode == 0
    assert "--json" in top.stdout
    assert "REGISTRY_URL" in top.stdout
    runner = CliRunner()
    for name, command in main.commands.items():
        shown = runner.invoke(main, [name, "--help"])
        assert shown.exit_code == 0, name
        assert command.help, f"{name} has no help text"
        assert " ".join(command.help.split("\n")[0].split()) in " ".join(shown.output.split())
        if name not in ("serve", "migrate", "keys"):  # these work on the database, not through a server
            assert "--url" in shown.output, name
            assert "--json" in shown.output, name
