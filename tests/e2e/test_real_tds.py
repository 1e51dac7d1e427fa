"""Every real-world TD in tests/data/real-tds registers and reads back unchanged, or is refused precisely.

The expected outcome comes from MANIFEST.txt (its JSON-Schema error count against the TD 1.1 schema), not from
the code under test: 0 errors → registered (PUT with its id, POST without), N errors → 400 naming N problems.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import httpx
import pytest

from tests.conftest import REAL_TDS

DISCOVERY_CONTEXT = "https://www.w3.org/2022/wot/discovery"


@dataclasses.dataclass(frozen=True)
class ManifestEntry:
    file: str
    has_id: bool
    schema_errors: int


def manifest() -> list[ManifestEntry]:
    """Rows of MANIFEST.txt: ``file | repo | path | commits | sha256 | version | @type | has id | errors | license``."""
    entries = []
    for line in (REAL_TDS / "MANIFEST.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        columns = [column.strip() for column in line.split("|")]
        entries.append(ManifestEntry(columns[0], columns[8].startswith("yes"), int(columns[9])))
    return entries


ENTRIES = manifest()


def test_manifest_lists_every_file() -> None:
    assert {entry.file for entry in ENTRIES} == {path.name for path in REAL_TDS.glob("*.json")}


def register(client: httpx.Client, document: dict[str, Any]) -> httpx.Response:
    headers = {"content-type": "application/td+json"}
    if "id" in document:
        return client.put(f"/things/{document['id']}", json=document, headers=headers)
    return client.post("/things", json=document, headers=headers)


def expected_context(document: dict[str, Any]) -> list[Any]:
    context = document["@context"]
    contexts = context if isinstance(context, list) else [context]
    return contexts if DISCOVERY_CONTEXT in contexts else [*contexts, DISCOVERY_CONTEXT]


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.file for entry in ENTRIES])
def test_real_td(client: httpx.Client, entry: ManifestEntry) -> None:
    raw = (REAL_TDS / entry.file).read_bytes()
    document = json.loads(raw)
    assert ("id" in document) == entry.has_id
    response = register(client, document)
    if entry.schema_errors:
        assert response.status_code == 400, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        errors = response.json()["validationErrors"]
        assert len(errors) == entry.schema_errors, errors
        assert all(error["field"] and error["description"] for error in errors)
        return
    assert response.status_code in (201, 204), response.text
    thing_id = document.get("id") or response.headers["location"]
    got = client.get(f"/things/{thing_id}")
    assert got.status_code == 200, got.text
    served = got.json()
    registration = served.pop("registration")
    assert {"created", "modified", "retrieved"} <= set(registration)
    assert served.pop("@context") == expected_context(document)
    assert served.pop("id") == thing_id
    expected = {key: value for key, value in document.items() if key not in ("@context", "id")}
    assert served == expected
    # Key order is kept too: the stored text is the registered document.
    assert list(served) == list(expected)


def test_real_tds_invalid_errors_name_the_problems(client: httpx.Client) -> None:
    """The refused directory TDs fail for what the research notes say: responses without contentType, and
    pre-REC @context URIs for the two TD 1.0-era ones."""
    for entry in ENTRIES:
        if not entry.schema_errors:
            continue
        document = json.loads((REAL_TDS / entry.file).read_text(encoding="utf-8"))
        errors = register(client, document).json()["validationErrors"]
        for error in errors:
            names_response = error["field"].endswith(".response") and "contentType" in error["description"]
            names_context = error["field"] == "@context"
            names_security = error["field"] == "(root)" and "security" in error["description"]
            assert names_response or names_context or names_security, (entry.file, error)
