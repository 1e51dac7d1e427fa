"""The ``registry`` client verbs, run as a command against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.support.things import thing
from tests.support.zygote import run_registry

ROOT = Path(__file__).resolve().parents[2]


def registry(base_url: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REGISTRY_URL": base_url, "COLUMNS": "200"}
    return run_registry(list(args), cwd=ROOT, env=env, input=stdin)


def test_register_get_list_delete(base_url: str, tmp_path: Path) -> None:
    document = thing("CLI thing", **{"@type": "lmos:Tool"})
    path = tmp_path / "thing.json"
    path.write_text(json.dumps(document))

    registered = registry(base_url, "register", str(path), "--ttl", "300", "--json")
    assert registered.returncode == 0, registered.stderr
    assert json.loads(registered.stdout)["created"] is True

    got = registry(base_url, "get", document["id"])
    assert json.loads(got.stdout)["registration"]["ttl"] == 300

    listed = registry(base_url, "list")
    assert document["id"] in listed.stdout
    assert "CLI thing" in listed.stdout
    assert "tool" in listed.stdout
    listed_json = json.loads(registry(base_url, "list", "--json").stdout)
    assert document["id"] in [item["id"] for item in listed_json]

    leased = registry(base_url, "lease", document["id"], "--json")
    assert json.loads(leased.stdout)["ttl"] == 300

    assert registry(base_url, "delete", document["id"]).returncode == 0
    missing = registry(base_url, "get", document["id"])
    assert missing.returncode == 1
    assert "404 Not Found" in missing.stderr
    assert document["id"] in missing.stderr


def test_invalid_description_exits_with_the_problem(base_url: str) -> None:
    result = registry(base_url, "register", "-", stdin=json.dumps({"id": "urn:test:bad", "title": 5}))
    assert result.returncode == 1
    assert "400" in result.stderr
    assert "invalid" in result.stderr


def test_unreachable_directory(tmp_path: Path) -> None:
    result = registry("http://127.0.0.1:9", "list")
    assert result.returncode == 1
    assert "unreachable" in result.stderr


def test_commands_start_without_importing_trio() -> None:
    """httpcore imports trio wherever it is installed (the development install has it, for selenium): 60 ms of
    every command's start. The command hides it from that import, and trio stays importable afterwards."""
    code = """
import importlib.util, sys
from registry.cli import main
try:
    main(["--url", "http://127.0.0.1:9", "list"])
except SystemExit:
    pass
assert "httpcore" in sys.modules, "the command made no request"
assert "trio" not in sys.modules, "trio was imported"
if importlib.util.find_spec("trio") is not None:
    import trio
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_import_registers_concurrently(base_url: str, tmp_path: Path) -> None:
    documents = [thing(f"Concurrent {index}") for index in range(40)]
    for index, document in enumerate(documents):
        (tmp_path / f"{index:02}.td.json").write_text(json.dumps(document))
    result = registry(base_url, "import", str(tmp_path), "--concurrency", "8", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert [item["file"] for item in summary["registered"]] == [f"{index:02}.td.json" for index in range(40)]
    assert {item["id"] for item in summary["registered"]} == {document["id"] for document in documents}
    assert summary["failed"] == []


def test_import_directory_with_failure_summary(base_url: str, tmp_path: Path) -> None:
    good = [thing(f"Imported {index}") for index in range(3)]
    for index, document in enumerate(good):
        (tmp_path / f"good-{index}.td.json").write_text(json.dumps(document))
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "broken.json").write_text("{not json")
    (tmp_path / "nested" / "latin1.json").write_bytes(b'{"id": "urn:test:latin1", "title": "Caf\xe9"}')
    (tmp_path / "nested" / "invalid.jsonld").write_text(json.dumps({"id": "urn:test:invalid", "title": 7}))
    (tmp_path / "notes.txt").write_text("ignored")

    result = registry(base_url, "import", str(tmp_path), "--json")
    assert result.returncode == 1
    summary = json.loads(result.stdout)
    assert sorted(item["id"] for item in summary["registered"]) == sorted(document["id"] for document in good)
    failures = {item["file"]: item for item in summary["failed"]}
    assert set(failures) == {"nested/broken.json", "nested/latin1.json", "nested/invalid.jsonld"}
    assert "not JSON" in failures["nested/latin1.json"]["detail"]
    assert failures["nested/invalid.jsonld"]["status"] == 400
    assert failures["nested/invalid.jsonld"]["validationErrors"]

    human = registry(base_url, "import", str(tmp_path))
    assert "3 registered, 3 failed (of 6) in " in human.stdout
    assert "descriptions/s" in human.stdout
    assert "broken.json" in human.stdout
    assert "not JSON" in human.stdout
    assert "The Thing Description is invalid" in human.stdout
    assert any(issue["field"] in human.stdout for issue in failures["nested/invalid.jsonld"]["validationErrors"])


def test_watch_prints_events(base_url: str, client: httpx.Client) -> None:
    env = {**os.environ, "REGISTRY_URL": base_url}
    watcher = subprocess.Popen(
        [sys.executable, "-m", "registry", "watch", "--json", "--count", "2"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watcher.stderr is not None
    assert watcher.stderr.readline().startswith(f"watching {base_url}/events/")  # subscribed: no sleep needed
    document = thing("Watched")
    client.put(f"/things/{document['id']}", json=document)
    client.delete(f"/things/{document['id']}")
    output, _ = watcher.communicate(timeout=20)
    events: list[dict[str, Any]] = [json.loads(line) for line in output.splitlines()]
    assert [(event["type"], event["data"]["id"]) for event in events] == [
        ("thing_created", document["id"]),
        ("thing_deleted", document["id"]),
    ]
