"""The SDK mirrors the server's wire types (so it needs neither SQLAlchemy nor node-semver): keep them in step."""

from __future__ import annotations

import subprocess
import sys

import msgspec
import pytest

from registry import discovery
from registry.client import models
from registry.client.calls import SEARCH_SORTS, TOOL_FORMATS
from registry.descriptions import compatibility, lint, summary, tool_formats

MIRRORS = [
    (models.Vendor, summary.Vendor),
    (models.Capability, summary.Capability),
    (models.LintWarning, lint.LintWarning),
    (models.Change, compatibility.Change),
    (models.Report, compatibility.Report),
    (models.CapabilityBrief, discovery.CapabilityBrief),
    (models.SearchItem, discovery.SearchItem),
    (models.FacetValue, discovery.FacetValue),
    (models.Facets, discovery.Facets),
    (models.SearchResult, discovery.SearchResult),
    (models.ThingSummary, discovery.ThingSummary),
    (models.VersionInfo, discovery.VersionInfo),
    (models.VersionList, discovery.VersionList),
    (models.VersionDetail, discovery.VersionDetail),
    (models.CompatibilityResult, discovery.CompatibilityResult),
    (models.Requirement, discovery.Requirement),
    (models.Provider, discovery.Provider),
    (models.Resolution, discovery.Resolution),
    (models.ResolveResult, discovery.ResolveResult),
]
#: Members the SDK adds from response headers.
CLIENT_ONLY = {models.ImportedTool: {"notices"}}


def _wire_fields(struct: type[msgspec.Struct]) -> dict[str, bool]:
    """Encoded name -> required."""
    return {field.encode_name: field.required for field in msgspec.structs.fields(struct)}


@pytest.mark.parametrize(("mirror", "server"), [*MIRRORS, (models.ImportedTool, discovery.ImportedTool)])
def test_mirror_has_the_server_fields(mirror: type[msgspec.Struct], server: type[msgspec.Struct]) -> None:
    mirrored = _wire_fields(mirror)
    for name in CLIENT_ONLY.get(mirror, set()):
        del mirrored[name]
    assert mirrored == _wire_fields(server)


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
