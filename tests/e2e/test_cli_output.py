"""What the ``registry`` command prints where scripts and logs read it, against a real server.

Through a pipe (a CI log, ``| grep``) Rich would lay tables out in 80 columns and cut cells with an ellipsis:
every table prints each row on one line, whole, whatever COLUMNS says. In a terminal tables take its width and
wrap, still cutting nothing. Every command that prints data prints JSON with ``--json``.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from registry.cli import main
from registry.client import RegistryClient
from tests.support.things import thing
from tests.support.zygote import run_registry

ROOT = Path(__file__).resolve().parents[2]
TOKEN = uuid.uuid4().hex[:8]
#: Longer than any terminal line: what Rich cut to "urn:example:lmos:…" in 80 columns.
LONG_ID = f"urn:example:lmos:{TOKEN}:" + "customer-service:billing:" * 6 + "invoices"
LONG_TITLE = f"Invoice and billing assistant {TOKEN} for customers who ask about charges they do not recognise"
LONG_VENDOR = f"Deutsche Telekom Business Solutions International {TOKEN} GmbH"
LONG_CAPABILITY = f"explainTheChargesOnTheLatestInvoiceOfTheCustomer{TOKEN}"
LONG_CAPABILITY_ID = f"urn:example:lmos:{TOKEN}:capability:billing:explain-the-charges-on-the-latest-invoice"
LONG_DESCRIPTION = "Explains, line by line, each charge on the customer's most recent invoice and why it was made"
ELLIPSIS = "…"


def registry(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command with its stdout a pipe, and COLUMNS at a CI log's 80."""
    return run_registry(list(args), cwd=ROOT, env={**os.environ, "COLUMNS": "80", **(env or {})})


def succeeded(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def long_agent(version: str, thing_id: str = LONG_ID) -> dict[str, Any]:
    return thing(
        LONG_TITLE,
        id=thing_id,
        version={"instance": version},
        **{
            "@type": "lmos:Agent",
            "lmos:metadata": {
                "lmos:vendor": {"lmos:name": LONG_VENDOR},
                "lmos:capabilities": [
                    {"id": LONG_CAPABILITY_ID, "name": LONG_CAPABILITY, "description": LONG_DESCRIPTION}
                ],
            },
        },
    )


@pytest.fixture(scope="module")
def long_things(base_url: str) -> Iterator[None]:
    with RegistryClient(base_url) as client:
        client.register(long_agent("1.1.0"))
        client.register(long_agent("1.2.0"), ttl=600)
        yield
        client.delete(LONG_ID)


def whole_on_one_line(output: str, *texts: str) -> None:
    lines = output.splitlines()
    for text in texts:
        assert any(text in line for line in lines), f"{text!r} is not whole on one line of:\n{output}"
    assert ELLIPSIS not in output, output


@pytest.mark.parametrize(
    "verb",
    [
        ("list", "--limit", "1000"),
        ("search", TOKEN),
        ("search", TOKEN, "--facets"),
        ("summary", LONG_ID),
    ],
    ids=["list", "search", "search-facets", "summary"],
)
def test_tables_in_a_pipe_print_ids_titles_vendors_and_capabilities_whole(
    base_url: str, long_things: None, verb: tuple[str, ...]
) -> None:
    output = succeeded(registry(*verb, "--url", base_url))
    whole_on_one_line(output, LONG_ID, LONG_TITLE)
    if verb[0] == "search":
        whole_on_one_line(output, LONG_VENDOR, f"{LONG_CAPABILITY}@1.2.0")
    if verb[0] == "summary":
        whole_on_one_line(output, LONG_CAPABILITY_ID, LONG_DESCRIPTION)


def test_sparql_table_in_a_pipe_prints_iris_whole(base_url: str, long_things: None) -> None:
    query = f"SELECT ?id ?title WHERE {{ GRAPH ?id {{ ?id td:title ?title }} FILTER(?id = <{LONG_ID}>) }}"
    output = succeeded(registry("sparql", query, "--url", base_url))
    whole_on_one_line(output, LONG_ID, LONG_TITLE)


def test_import_failures_in_a_pipe_name_whole_file_names_and_field_paths(base_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "descriptions-of-the-billing-agents-of-the-customer-service-department"
    folder.mkdir()
    action = "explainTheChargesOnTheLatestInvoiceOfTheCustomerLineByLine"
    invalid = thing(
        "Invalid",
        actions={
            action: {
                "input": {"type": "object", "properties": {"theInvoiceWhoseChargesAreExplained": {"type": 5}}},
                "forms": [{"href": "https://billing.example/explain"}],
            }
        },
    )
    name = f"an-agent-description-{TOKEN}-whose-file-name-is-longer-than-a-terminal-line-is-wide.td.json"
    (folder / name).write_text(json.dumps(invalid))
    result = registry("import", str(tmp_path), "--url", base_url)
    assert result.returncode == 1, result.stderr
    field = f"actions.{action}.input.properties.theInvoiceWhoseChargesAreExplained.type"
    whole_on_one_line(result.stdout, f"{folder.name}/{name}", field)


def test_keys_list_in_a_pipe_prints_key_ids_names_and_namespaces_whole(own_database_url: str) -> None:
    name = f"the-continuous-integration-pipeline-of-the-billing-team-{TOKEN}"
    namespace = f"urn:example:lmos:{TOKEN}:agents:customer-service:billing:*"
    created = registry(
        "keys", "create", "--name", name, "--scopes", "read,write", "--namespace", namespace,
        "--vendor", LONG_VENDOR, "--database-url", own_database_url, "--json",
    )  # fmt: skip
    key = json.loads(succeeded(created))
    output = succeeded(registry("keys", "list", "--database-url", own_database_url))
    whole_on_one_line(output, key["id"], name, namespace, LONG_VENDOR, f"key:{name}")


def test_tables_in_a_pipe_ignore_columns(base_url: str, long_things: None) -> None:
    narrow = succeeded(registry("search", TOKEN, "--url", base_url, env={"COLUMNS": "20"}))
    wide = succeeded(registry("search", TOKEN, "--url", base_url, env={"COLUMNS": "400"}))
    assert narrow == wide
    whole_on_one_line(narrow, LONG_ID, LONG_TITLE)


def in_terminal(*args: str, columns: int) -> str:
    """The command with its stdout a terminal ``columns`` wide (a pseudo-terminal); what it printed, colours
    removed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    sizes = ("COLUMNS", "LINES", "JUPYTER_COLUMNS", "JUPYTER_LINES")
    env = {key: value for key, value in os.environ.items() if key not in sizes} | {"TERM": "xterm"}
    process = subprocess.Popen(
        [sys.executable, "-m", "registry", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    printed = bytearray()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1)
        if not ready:
            if process.poll() is not None:
                break
            continue
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end is closed: the command exited
            break
        if not chunk:
            break
        printed += chunk
    os.close(leader)
    _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors.decode()
    return re.sub(r"\x1b\[[0-9;]*m", "", printed.decode()).replace("\r\n", "\n")


def test_tables_in_a_terminal_wrap_within_its_width_and_cut_nothing(base_url: str, long_things: None) -> None:
    columns = 70
    output = in_terminal("search", TOKEN, "--url", base_url, columns=columns)
    assert ELLIPSIS not in output, output
    assert all(len(line) <= columns for line in output.splitlines()), output
    # The id column keeps half the width and folds the id over the next lines; the other cells wrap at words.
    width = columns // 2
    assert all(LONG_ID[start : start + width] in output for start in range(0, len(LONG_ID), width)), output
    assert set(LONG_TITLE.split()) <= set(output.split()), output


#: Commands that print no data, and why.
WITHOUT_JSON = {"serve": "runs the directory until it is stopped; it prints its log, not data"}


def commands(
    group: click.Group = main, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def test_every_command_that_prints_data_takes_json() -> None:
    for path, command in commands():
        if " ".join(path) in WITHOUT_JSON:
            continue
        options = {opt for param in command.params for opt in getattr(param, "opts", ())}
        assert "--json" in options, f"registry {' '.join(path)} has no --json"


def parsed(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(succeeded(result))


def test_every_command_prints_json_that_parses(base_url: str, own_database_url: str, tmp_path: Path) -> None:
    agent = long_agent("2.0.0", f"urn:example:lmos:{TOKEN}:json:agent")
    gone = thing("Deleted by the test", id=f"urn:example:lmos:{TOKEN}:json:deleted")
    (tmp_path / "agent.json").write_text(json.dumps(agent))
    (tmp_path / "import").mkdir()
    (tmp_path / "import" / "gone.json").write_text(json.dumps(gone))
    url = ("--url", base_url)
    database = ("--database-url", own_database_url)
    with RegistryClient(base_url) as client:
        client.register(long_agent("1.9.0", agent["id"]))
    answers: dict[str, Any] = {
        "register": parsed(registry("register", str(tmp_path / "agent.json"), "--ttl", "600", "--json", *url)),
        "import": parsed(registry("import", str(tmp_path / "import"), "--json", *url)),
        "get": parsed(registry("get", agent["id"], "--json", *url)),
        "list": parsed(registry("list", "--limit", "5", "--json", *url)),
        "lease": parsed(registry("lease", agent["id"], "--json", *url)),
        "search": parsed(registry("search", TOKEN, "--json", *url)),
        "summary": parsed(registry("summary", agent["id"], "--json", *url)),
        "versions": parsed(registry("versions", agent["id"], "--json", *url)),
        "compat": parsed(registry("compat", agent["id"], "1.9.0", "2.0.0", "--json", *url)),
        "resolve": parsed(registry("resolve", LONG_CAPABILITY_ID, "--json", *url)),
        "export": parsed(registry("export", agent["id"], "--format", "openai", "--json", *url)),
        "jsonpath": parsed(registry("jsonpath", "$[0].id", "--json", *url)),
        "delete": parsed(registry("delete", gone["id"], "--json", *url)),
        "migrate": parsed(registry("migrate", *database, "--json")),
        "keys create": parsed(registry("keys", "create", "--name", f"json-{TOKEN}", *database, "--json")),
        "keys list": parsed(registry("--json", "keys", "list", *database)),  # --json before the verb too
        "keys revoke": parsed(registry("keys", "revoke", f"json-{TOKEN}", *database, "--json")),
    }
    select_query = f"SELECT ?title WHERE {{ <{agent['id']}> td:title ?title }}"
    ask_query = f"ASK {{ <{agent['id']}> td:title ?title }}"
    construct = f"CONSTRUCT {{ <{agent['id']}> td:title ?title }} WHERE {{ <{agent['id']}> td:title ?title }}"
    sparql = {
        "select": parsed(registry("sparql", select_query, "--json", *url)),
        "ask": parsed(registry("sparql", ask_query, "--json", *url)),
        "construct": parsed(registry("sparql", construct, "--json", *url)),
    }
    watch = watched_event_json(base_url, agent["id"])

    assert answers["register"]["id"] == agent["id"]
    assert answers["import"]["registered"][0]["id"] == gone["id"]
    assert answers["get"]["id"] == agent["id"]
    assert isinstance(answers["list"], list)
    assert answers["lease"]["id"] == agent["id"]
    assert agent["id"] in [item["id"] for item in answers["search"]["items"]]
    assert answers["summary"]["capabilities"][0]["id"] == LONG_CAPABILITY_ID
    assert [item["version"] for item in answers["versions"]["items"]] == ["2.0.0", "1.9.0"]
    assert answers["compat"]["to"] == "2.0.0"
    assert answers["resolve"]["resolved"] is True
    assert isinstance(answers["export"], list)
    assert isinstance(answers["jsonpath"], list)
    assert answers["delete"] == {"id": gone["id"], "deleted": True}
    assert re.fullmatch(r"\w+", answers["migrate"]["revision"])
    assert answers["keys create"]["secret"]
    assert f"json-{TOKEN}" in [key["name"] for key in answers["keys list"]]
    assert answers["keys revoke"]["revoked"]
    assert sparql["select"]["results"]["bindings"][0]["title"]["value"] == LONG_TITLE
    assert sparql["ask"]["boolean"] is True
    assert agent["id"] in json.dumps(sparql["construct"])
    assert (watch["type"], watch["data"]["id"]) == ("thing_updated", agent["id"])
    with RegistryClient(base_url) as client:
        client.delete(agent["id"])


def watched_event_json(base_url: str, thing_id: str) -> Any:
    """``registry watch --json``: one JSON object a line; here the one event of a patch."""
    process = subprocess.Popen(
        [sys.executable, "-m", "registry", "watch", "-q", TOKEN, "--count", "1", "--json", "--url", base_url],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    assert process.stderr.readline().startswith("watching")
    with RegistryClient(base_url) as client:
        client.patch(thing_id, {"description": "watched"})
    output, errors = process.communicate(timeout=30)
    assert process.returncode == 0, errors
    [line] = output.splitlines()
    return json.loads(line)
