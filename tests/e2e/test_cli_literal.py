"""The CLI prints registrants' text literally: Rich markup, emoji codes and highlighting in titles, ids, vendors and
capability names come out as typed, and control characters (ESC, C1, bidi overrides) come out as visible
``\\uXXXX`` escapes, in tables, lines, errors and JSON alike. Run as a command against a real server."""

from __future__ import annotations

import json
import subprocess
import uuid
from typing import Any

import pytest

from registry.client import RegistryClient
from tests.e2e.test_cli import registry
from tests.support.things import thing

TOKEN = uuid.uuid4().hex[:10]
#: An id Rich would turn into "urn:…☂024" (emoji code) and highlight.
HOSTILE_ID = f"urn:cli-literal-{TOKEN}:umbrella:024"
LINK = "[link=http://evil.example]click[/link]"
CLEAR_SCREEN = "\x1b[2J"
BIDI = "\u202egnp.exe"
C1 = "\x9b2J"
TITLE = f"{LINK} {CLEAR_SCREEN}{C1} :umbrella: {BIDI} [bold]{TOKEN}[/bold]"
VENDOR = f"[red]vendor-{TOKEN}[/red]"
CAPABILITY = f"cap-{TOKEN}:umbrella:"
#: What each hostile piece must look like once printed.
SHOWN = [HOSTILE_ID, LINK, "\\u001b[2J", "\\u009b2J", ":umbrella:", "\\u202egnp.exe", f"[bold]{TOKEN}[/bold]"]


def hostile_agent(version: str) -> dict[str, Any]:
    return thing(
        TITLE,
        **{
            "@type": "lmos:Agent",
            "id": HOSTILE_ID,
            "description": f"{LINK} {CLEAR_SCREEN}",
            "version": {"instance": version},
            "lmos:metadata": {"lmos:vendor": {"lmos:name": VENDOR}},
            "lmos:capabilities": [{"id": CAPABILITY, "name": f"{LINK}{CLEAR_SCREEN}", "version": version}],
        },
    )


@pytest.fixture(scope="module")
def hostile(base_url: str) -> None:
    with RegistryClient(base_url) as client:
        client.register(hostile_agent("1.0.0"))
        client.register(hostile_agent("1.1.0"))


def assert_literal(result: subprocess.CompletedProcess[str], *, shown: list[str]) -> None:
    printed = result.stdout + result.stderr
    for control in ("\x1b", "\x9b", "\u202e"):
        assert control not in printed, (result.args, printed)
    assert "☂" not in printed, printed
    for piece in shown:
        assert piece in printed, (piece, printed)


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [
        (["list"], [HOSTILE_ID, LINK, "\\u001b[2J"]),
        (["search", TOKEN], [HOSTILE_ID, LINK, VENDOR, "\\u202egnp.exe"]),
        (["summary", HOSTILE_ID], [*SHOWN, VENDOR, CAPABILITY]),
        (["versions", HOSTILE_ID], ["1.1.0", "1.0.0"]),
        (["resolve", CAPABILITY], [HOSTILE_ID]),
        (["get", HOSTILE_ID], [HOSTILE_ID, LINK, "\\u001b[2J", "\\u202egnp.exe", "\\u009b2J"]),
        (["list", "--json"], [HOSTILE_ID, "\\u001b[2J", "\\u202egnp.exe"]),
        (["jsonpath", f'$[?@.id == "{HOSTILE_ID}"].title'], ["\\u001b[2J", "\\u009b2J", "\\u202egnp.exe"]),
        (
            ["sparql", f"SELECT ?title WHERE {{ <{HOSTILE_ID}> <https://www.w3.org/2019/wot/td#title> ?title }}"],
            [LINK, "\\u001b[2J", "\\u202egnp.exe"],
        ),
    ],
    ids=["list", "search", "summary", "versions", "resolve", "get", "list-json", "jsonpath", "sparql"],
)
def test_registrants_text_is_printed_literally(
    base_url: str, hostile: None, arguments: list[str], shown: list[str]
) -> None:
    result = registry(base_url, *arguments)
    assert result.returncode == 0, result.stderr
    assert_literal(result, shown=shown)


def test_json_output_keeps_its_meaning(base_url: str, hostile: None) -> None:
    printed = registry(base_url, "get", HOSTILE_ID).stdout
    assert json.loads(printed)["title"] == TITLE


def test_an_error_naming_registrants_text_is_printed_literally(base_url: str) -> None:
    missing = f"urn:cli-literal-{TOKEN}:[link=http://evil.example]x[/link]:umbrella:"
    result = registry(base_url, "get", missing)
    assert result.returncode == 1
    assert_literal(result, shown=["404 Not Found", missing])
    refused = registry(base_url, "register", "-", stdin=json.dumps({**hostile_agent("2.0.0"), "security": 7}))
    assert refused.returncode == 1
    assert_literal(refused, shown=["Error:"])
