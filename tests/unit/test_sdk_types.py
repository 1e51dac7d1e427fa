"""The SDK is typed for its users: ``py.typed`` ships with the package, so ``mypy --strict`` checks code that uses
it (the examples, and the snippets below) against the SDK's own annotations: the closed vocabularies are
``Literal`` types (the server's own sets), and each client method has the parameters of its call and returns
what that client gives (awaited, iterated, entered)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import get_args, get_type_hints

from mypy import api

from registry.client import Requirement, vocabulary
from registry.descriptions import model, summary, tool_formats
from registry.discovery import service as discovery
from registry.events import hub
from registry.http import discovery as http_discovery

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_is_marked_typed() -> None:
    assert resources.files("registry").joinpath("py.typed").is_file()


def test_the_examples_pass_mypy_strict_against_the_sdk(tmp_path: Path) -> None:
    examples = sorted(str(path) for path in (ROOT / "examples").glob("*.py"))
    assert examples
    stdout, stderr, status = api.run(["--strict", "--cache-dir", str(tmp_path / "cache"), *examples])
    assert status == 0, stdout + stderr


def test_the_vocabularies_are_the_servers() -> None:
    assert vocabulary.KINDS == summary.KINDS
    assert vocabulary.CONVENTIONS == model.CONVENTIONS
    assert vocabulary.SEARCH_SORTS == discovery.SORTS
    assert vocabulary.VENDOR_MATCHES == discovery.VENDOR_MATCHES
    assert vocabulary.EVENT_TYPES == hub.EVENT_TYPES
    assert vocabulary.TOOL_FORMATS == tool_formats.FORMATS
    assert get_args(http_discovery.ExportFormat) == vocabulary.EXPORT_FORMATS
    assert get_args(get_type_hints(Requirement)["strategy"]) == vocabulary.STRATEGIES


USES = """
from collections.abc import AsyncIterator, Iterator
from typing import Any, assert_type

from registry.client import (
    AsyncEventStream, AsyncRegistryClient, Event, EventStream, RegistryClient, SearchItem, SearchResult, VersionInfo,
)


async def uses(client: AsyncRegistryClient, blocking: RegistryClient) -> None:
    assert_type(await client.search(kind="agent", sort="modified", vendor_match="fuzzy"), SearchResult)
    assert_type(blocking.search(kind="tool", convention="mcp"), SearchResult)
    assert_type(client.iter_search(capability="billing", page_size=50), AsyncIterator[SearchItem])
    assert_type(blocking.iter_things(page_size=10), Iterator[dict[str, Any]])
    assert_type(blocking.iter_versions("urn:a", satisfies="^1"), Iterator[VersionInfo])
    assert_type(client.watch("thing_created", kind="agent"), AsyncEventStream)
    assert_type(blocking.watch(last_event_id=41), EventStream)
    async with client.watch(capability="billing") as changes:
        event = await anext(changes)
        assert_type(event, Event)
        if event.type == "thing_deleted":
            return
    await client.export("urn:a", "a2a")
    blocking.sparql_graph("DESCRIBE <urn:a>", media_type="application/ld+json")
"""

MISTAKES = {
    'client.search(kind="robot")': 'Argument "kind"',
    'client.search(sort="newest")': 'Argument "sort"',
    'client.iter_search(vendor_match="similar")': 'Argument "vendor_match"',
    'client.watch("thing_exploded")': "Argument 1",
    'client.import_tool({}, "langchain")': "Argument 2",
    'client.sparql_graph("DESCRIBE <urn:a>", media_type="text/html")': 'Argument "media_type"',
    "client.search(limt=3)": 'Unexpected keyword argument "limt"',
    "client.get()": "Too few arguments",
}


def _mypy_strict(tmp_path: Path, source: str) -> tuple[str, int]:
    module = tmp_path / "uses_the_sdk.py"
    module.write_text(source)
    stdout, stderr, status = api.run(["--strict", "--cache-dir", str(tmp_path / "cache"), str(module)])
    return stdout + stderr, status


def test_mypy_strict_accepts_the_vocabularies_and_knows_what_each_call_returns(tmp_path: Path) -> None:
    output, status = _mypy_strict(tmp_path, USES)
    assert status == 0, output


def test_mypy_strict_rejects_values_outside_the_vocabularies(tmp_path: Path) -> None:
    lines = [f"    {call}  # {index}" for index, call in enumerate(MISTAKES)]
    source = "from registry.client import RegistryClient\n\n\ndef mistakes(client: RegistryClient) -> None:\n"
    output, status = _mypy_strict(tmp_path, source + "\n".join(lines) + "\n")
    assert status == 1
    for line_number, expected in enumerate(MISTAKES.values(), start=5):
        assert f"uses_the_sdk.py:{line_number}: error: {expected}" in output, output
