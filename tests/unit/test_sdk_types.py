"""The SDK is typed for its users: ``py.typed`` ships with the package, so ``mypy --strict`` checks code that uses
it (the examples, and the snippets below) against the SDK's own annotations: the closed vocabularies are
``Literal`` types (the server's own sets), and each client method has the parameters of its call and returns
what that client gives (awaited, iterated, entered)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import NamedTuple, get_args, get_type_hints

import pytest
from mypy import api

from registry.client import Requirement, vocabulary
from registry.descriptions import model, summary, tool_formats
from registry.discovery import service as discovery
from registry.events import hub
from registry.http import discovery as http_discovery

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_is_marked_typed() -> None:
    assert resources.files("registry").joinpath("py.typed").is_file()


def test_the_examples_pass_mypy_strict_against_the_sdk(strict: MypyRun) -> None:
    examples = sorted((ROOT / "examples").glob("*.py"))
    assert examples
    assert [path for path in strict.checked if path.parent == ROOT / "examples"] == examples
    assert not [error for error in strict.errors_outside(MISTAKES_MODULE) if error.file in examples], strict.output


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


MISTAKES_MODULE = "mistakes_with_the_sdk.py"


class MypyRun:
    """One ``mypy --strict`` over the examples and the two snippets: its output, read per file (a run per test would
    analyse the SDK and the standard library's stubs again each time, a cold cache each)."""

    def __init__(self, directory: Path) -> None:
        uses = directory / "uses_the_sdk.py"
        uses.write_text(USES)
        lines = [f"    {call}  # {index}" for index, call in enumerate(MISTAKES)]
        source = "from registry.client import RegistryClient\n\n\ndef mistakes(client: RegistryClient) -> None:\n"
        mistakes = directory / MISTAKES_MODULE
        mistakes.write_text(source + "\n".join(lines) + "\n")
        self.checked = [*sorted((ROOT / "examples").glob("*.py")), uses, mistakes]
        arguments = ["--strict", "--cache-dir", str(directory / "cache"), *map(str, self.checked)]
        stdout, stderr, self.status = api.run(arguments)
        self.output = stdout + stderr

    def errors_outside(self, module: str) -> list[MypyError]:
        """The errors about any file but ``module``."""
        errors = [MypyError(Path(line.partition(":")[0]).resolve(), line) for line in self.output.splitlines()]
        return [error for error in errors if ": error:" in error.line and error.file.name != module]


class MypyError(NamedTuple):
    file: Path
    line: str


@pytest.fixture(scope="module")
def strict(tmp_path_factory: pytest.TempPathFactory) -> MypyRun:
    return MypyRun(tmp_path_factory.mktemp("mypy"))


def test_mypy_strict_accepts_the_vocabularies_and_knows_what_each_call_returns(strict: MypyRun) -> None:
    assert strict.status in (0, 1), strict.output  # 1: the mistakes below; anything else is mypy failing
    assert not strict.errors_outside(MISTAKES_MODULE), strict.output


def test_mypy_strict_rejects_values_outside_the_vocabularies(strict: MypyRun) -> None:
    assert strict.status == 1
    for line_number, expected in enumerate(MISTAKES.values(), start=5):
        assert f"{MISTAKES_MODULE}:{line_number}: error: {expected}" in strict.output, strict.output
