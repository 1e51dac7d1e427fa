"""Eclipse node-wot (``@node-wot/core`` + ``@node-wot/binding-http``), the most used WoT runtime, as a consumer of
the directory's own Thing Description against a live server: it fetches and validates the TD, reads the listing
through the ``things`` property's data schema, and invokes every write and search action by its forms.

What node-wot itself gets wrong (docs/interop.md) is asserted as such: its exploration validates each listed TD
against TD 1.0's schema and drops the others; it sends ``[object Object]`` as a merge patch unless given a codec.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.npm_clients import install_npm_clients, run_node
from tests.support.servers import ServerProcess


@pytest.fixture(scope="session")
def npm_clients() -> Path:
    return install_npm_clients()


@pytest.fixture(scope="module")
def session(npm_clients: Path, server: ServerProcess) -> dict[str, Any]:
    """One run of tests/clients/node_wot.mjs: each step's value or error."""
    thing_id, td10_id = f"urn:uuid:{uuid.uuid4()}", f"urn:uuid:{uuid.uuid4()}"
    outcomes = run_node(npm_clients, "node_wot.mjs", server.base_url, thing_id, td10_id)
    return {"thing_id": thing_id, "td10_id": td10_id, **outcomes}


def test_node_wot_accepts_the_directory_td(session: dict[str, Any]) -> None:
    assert session["requested"] == "LMOS Agent and Tool Registry"


def test_node_wot_registers_updates_and_deletes_without_error_after_success(
    session: dict[str, Any], server: ServerProcess
) -> None:
    for step in ("createThing", "createAnonymousThing", "updateThing", "partiallyUpdateThingWithCodec", "deleteThing"):
        assert session[step] == {"value": ""}, step
    assert session["retrieveThing"] == {"value": "node-wot lamp"}
    assert httpx.get(f"{server.base_url}/things/{session['thing_id']}").status_code == 404


def test_node_wot_reads_the_listing_through_the_things_property_schema(session: dict[str, Any]) -> None:
    assert session["thing_id"] in session["things"].get("value", []), session["things"]


def test_node_wot_searches_by_jsonpath_and_by_sparql_with_both_forms(session: dict[str, Any]) -> None:
    assert session["searchJSONPath"] == {"value": [session["thing_id"]]}
    for form in ("searchSPARQL_form0", "searchSPARQL_form1"):  # GET with ?query=, POST application/sparql-query
        assert "node-wot lamp 2" in session[form].get("value", []), (form, session[form])


def test_node_wot_explores_the_directory_yielding_the_td10_descriptions(session: dict[str, Any]) -> None:
    explored = session["explored"].get("value", {}).get("ids", [])
    assert session["td10_id"] in explored, session["explored"]
    assert session["thing_id"] not in explored  # node-wot drops TD 1.1 descriptions


def test_node_wot_merge_patch_without_a_codec_is_refused_as_invalid_json(session: dict[str, Any]) -> None:
    assert session["partiallyUpdateThing"] == {"error": "Client error: Bad Request"}
