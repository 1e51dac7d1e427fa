"""server.json ↔ lmos:Tool: the official examples validate (or not) against the bundled server.schema.json, and
the TD members are derived member by member with the entry kept verbatim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registry.conventions import mcp
from registry.descriptions.summary import summarise
from registry.descriptions.validation import validate

EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "mcp" / "examples"
VALID = sorted((EXAMPLES / "valid").glob("*.json"))
INVALID = sorted((EXAMPLES / "invalid").glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


@pytest.mark.parametrize("path", VALID, ids=[path.stem for path in VALID])
def test_valid_examples_become_valid_lmos_tools(path: Path) -> None:
    server = load(path)
    mcp.validate_server(server)
    document = mcp.server_to_description(server)
    assert validate(document) == []
    summary = summarise(document)
    assert (summary.kind, summary.convention, summary.version) == ("tool", "mcp", server["version"])
    assert summary.vendor is not None
    assert summary.vendor.name == mcp.namespace_of(server["name"])
    assert [(item.id, item.name) for item in summary.capabilities] == [
        (server["name"], server["name"].split("/", 1)[1])
    ]
    assert mcp.server_of(document) == server


@pytest.mark.parametrize("path", INVALID, ids=[path.stem for path in INVALID])
def test_invalid_examples_name_the_member(path: Path) -> None:
    with pytest.raises(mcp.ServerError) as caught:
        mcp.validate_server(load(path))
    assert caught.value.errors


def test_remotes_packages_repository_and_icons_become_forms_and_links() -> None:
    remote = load(EXAMPLES / "valid" / "with-remote.json")
    document = mcp.server_to_description(remote)
    assert document["forms"] == [
        {"href": "https://{host}/mcp", "op": "queryallactions", "mcp:transport": "streamable-http"}
    ]
    assert {"href": "https://github.com/modelcontextprotocol/servers", "rel": "mcp:repository"} in document["links"]
    assert {"href": "https://example.com/icon.png", "rel": "icon", "type": "image/png", "sizes": "48x48 96x96"} in (
        document["links"]
    )
    package = mcp.server_to_description(load(EXAMPLES / "valid" / "with-package.json"))
    assert package["links"] == [
        {
            "href": "https://www.npmjs.com/package/@modelcontextprotocol/server-weather",
            "rel": "mcp:package",
            "type": "application/x-npm",
        }
    ]


def test_a_version_that_is_not_semver_is_kept_as_lmos_version() -> None:
    server = {"name": "com.example/dated", "description": "Dated releases", "version": "2025.01.15"}
    mcp.validate_server(server)
    document = mcp.server_to_description(server)
    assert "version" not in document
    assert document["lmos:version"] == "2025.01.15"
    assert validate(document) == []
    assert summarise(document).version == "2025.01.15"
