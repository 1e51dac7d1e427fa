"""The ``registry`` command's conventions, against a real server: global options before or after the verb,
positional search text, ids never cut in tables, and errors that name the option as it was typed."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from registry.client import RegistryClient
from tests.support.servers import ServerProcess
from tests.support.things import thing
from tests.support.zygote import run_registry

ROOT = Path(__file__).resolve().parents[2]
TOKEN = uuid.uuid4().hex[:8]
#: Ids that only differ at the end, as long as real ones get: a table that cuts them shows the same text thrice.
PREFIX = f"urn:example:lmos:{TOKEN}:agents:customer-service:billing:"
IDS = [f"{PREFIX}{name}" for name in ("invoices", "refunds", "disputes")]


def registry(*args: str, columns: int = 130, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_registry(list(args), cwd=ROOT, env={**os.environ, "COLUMNS": str(columns), **(env or {})})


def register_corpus(base_url: str) -> None:
    with RegistryClient(base_url) as client:
        for thing_id in IDS:
            client.register(thing(f"Conventions {TOKEN}", id=thing_id))


@pytest.fixture(scope="module")
def corpus(base_url: str) -> None:
    register_corpus(base_url)


@pytest.mark.parametrize(
    "args",
    [
        ("--url", "{url}", "search", TOKEN, "--json"),
        ("search", TOKEN, "--url", "{url}", "--json"),
        ("--json", "--url", "{url}", "search", TOKEN),
        ("--url", "http://127.0.0.1:9", "search", TOKEN, "--url", "{url}", "--json"),  # after the verb wins
    ],
)
def test_global_options_before_or_after_the_verb(base_url: str, corpus: None, args: tuple[str, ...]) -> None:
    result = registry(*(arg.format(url=base_url) for arg in args))
    assert result.returncode == 0, result.stderr
    assert sorted(item["id"] for item in json.loads(result.stdout)["items"]) == sorted(IDS)


def test_url_before_the_verb_wins_over_the_environment(base_url: str, corpus: None) -> None:
    result = registry("--url", base_url, "list", "--ids-only", env={"REGISTRY_URL": "http://127.0.0.1:9"})
    assert result.returncode == 0, result.stderr
    assert set(IDS) <= set(result.stdout.split())


def test_search_text_as_words(base_url: str, corpus: None) -> None:
    positional = registry("search", "Conventions", TOKEN, "--url", base_url, "--ids-only")
    option = registry("search", "-q", f"Conventions {TOKEN}", "--url", base_url, "--ids-only")
    assert positional.returncode == 0, positional.stderr
    assert sorted(positional.stdout.split()) == sorted(IDS)
    assert positional.stdout == option.stdout
    both = registry("search", "Conventions", "-q", TOKEN, "--url", base_url)
    assert both.returncode == 2
    assert "either as WORDS or with -q/--query" in both.stderr


@pytest.mark.parametrize("verb", [("search", TOKEN), ("list", "--limit", "1000")])
def test_ids_are_never_cut(
    start_server: Callable[..., ServerProcess], own_database_url: str, verb: tuple[str, ...]
) -> None:
    # A server of its own: on the shared one, a listing page need not hold this test's ids.
    base_url = start_server(database=own_database_url).base_url
    register_corpus(base_url)
    wide = registry(*verb, "--url", base_url, columns=130)
    assert wide.returncode == 0, wide.stderr
    lines = wide.stdout.splitlines()
    for thing_id in IDS:
        assert any(thing_id in line for line in lines), wide.stdout
    narrow = registry(*verb, "--url", base_url, columns=60)
    # Through a pipe a table ignores COLUMNS: each row is one line, its id whole.
    for thing_id in IDS:
        assert any(thing_id in line for line in narrow.stdout.splitlines()), narrow.stdout
    ids_only = registry(*verb, "--url", base_url, "--ids-only", columns=40)
    assert set(IDS) <= set(ids_only.stdout.splitlines())


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("search", "--capability", "x", "--capability-version", "not a range"), "--capability-version:"),
        (("search", "--capability", "x", "--capability-version=[1,2"), "--capability-version:"),
        (("search", "--sort", "title", "--cursor", "!!!"), "--cursor:"),
        (("resolve", "x", "--range", "one or two"), "--range:"),
        (("resolve", "x", "--strategy", "closest", "--closest-to", "soon"), "--closest-to:"),
        (("versions", "urn:x", "--satisfies", ">>1"), "--satisfies:"),
    ],
)
def test_errors_name_the_option_typed(base_url: str, args: tuple[str, ...], named: str) -> None:
    result = registry(*args, "--url", base_url)
    assert result.returncode == 1
    assert named in result.stderr, result.stderr
