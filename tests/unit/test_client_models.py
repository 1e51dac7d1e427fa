"""The SDK shares the server's wire types (registry/wire.py) and must import without the server stack."""

from __future__ import annotations

import subprocess
import sys

from registry.client.calls import SEARCH_SORTS, TOOL_FORMATS
from registry.descriptions import tool_formats
from registry.discovery import service as discovery


def test_tool_formats_and_sorts_are_the_servers() -> None:
    assert TOOL_FORMATS == tool_formats.FORMATS
    assert SEARCH_SORTS == discovery.SORTS


def test_the_sdk_imports_without_the_server_stack() -> None:
    probe = (
        "import sys, registry.client; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'sqlalchemy', 'litestar', 'asyncpg', 'nodesemver', 'rdflib', 'pyoxigraph', 'pyld', 'jsonschema_rs'}))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
