"""The vendor a key is bound to (``registry keys create --vendor``), the vendor the catalog and search filter by and
the vendor SPARQL answers are one value, whatever JSON-LD spelling a description uses for it (docs/security.md,
"What a description may say"): over HTTP against the application in process."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from registry.app import create_app
from registry.config import Settings
from tests.support.in_process import local_client, until_sparql_answers
from tests.support.keys import create_key
from tests.support.servers import fresh_database

TD = "https://www.w3.org/2022/wot/td/v1.1"
LMOS = "https://eclipse.dev/lmos/protocol/v1"
ACME = "Acme Corp"
TELEKOM = "Deutsche Telekom AG"
RESULTS = {"Accept": "application/sparql-results+json"}


def described(thing_id: str, context: dict[str, Any], members: dict[str, Any]) -> dict[str, Any]:
    return {
        "@context": [TD, context],
        "id": thing_id,
        "title": "Spelled agent",
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
        **members,
    }


def prefix_alias(thing_id: str, vendor: str) -> dict[str, Any]:
    return described(thing_id, {"x": LMOS}, {"@type": "x:Agent", "x:metadata": {"x:vendor": {"x:name": vendor}}})


def full_iris(thing_id: str, vendor: str) -> dict[str, Any]:
    return described(
        thing_id,
        {},
        {"@type": f"{LMOS}#Agent", f"{LMOS}#metadata": {f"{LMOS}/vendor": {f"{LMOS}#name": vendor}}},
    )


def vocab(thing_id: str, vendor: str) -> dict[str, Any]:
    """``metadata`` and ``vendor`` through ``@vocab`` (``name`` is a term of the TD context, so it is spelled)."""
    return described(
        thing_id,
        {"@vocab": LMOS + "#", "lmos": LMOS},
        {"@type": "Agent", "metadata": {"vendor": {"lmos:name": vendor}}},
    )


def local_term(thing_id: str, vendor: str) -> dict[str, Any]:
    return described(
        thing_id,
        {"lmos": LMOS, "vendorName": f"{LMOS}#name"},
        {"@type": "lmos:Agent", "lmos:metadata": {"lmos:vendor": {"vendorName": vendor}}},
    )


def nested_context(thing_id: str, vendor: str) -> dict[str, Any]:
    return described(
        thing_id,
        {"lmos": LMOS},
        {
            "@type": "lmos:Agent",
            "lmos:metadata": {"@context": {"v": f"{LMOS}#"}, "v:vendor": {"v:name": vendor}},
        },
    )


def type_alias(thing_id: str, vendor: str) -> dict[str, Any]:
    return described(
        thing_id,
        {"lmos": LMOS, "kind": "@type"},
        {"kind": "lmos:Agent", "lmos:metadata": {"lmos:vendor": {"lmos:name": vendor}}},
    )


def rebound_prefix(thing_id: str, vendor: str) -> dict[str, Any]:
    """``lmos:`` bound elsewhere: its members are no LMOS members; the vendor is the one under ``x:``."""
    return described(
        thing_id,
        {"lmos": "https://elsewhere.example/", "x": LMOS + "#"},
        {
            "@type": "x:Agent",
            "lmos:metadata": {"lmos:vendor": {"lmos:name": ACME}},
            "x:metadata": {"x:vendor": {"x:name": vendor}},
        },
    )


SPELLINGS: dict[str, Callable[[str, str], dict[str, Any]]] = {
    "prefix alias": prefix_alias,
    "full IRIs": full_iris,
    "@vocab": vocab,
    "local term": local_term,
    "nested @context": nested_context,
    "@type alias": type_alias,
    "rebound lmos prefix": rebound_prefix,
}


@pytest.fixture(scope="module")
def database_and_key(postgres_admin_url: str) -> Iterator[tuple[str, str]]:
    """A database of this module's own, and a key bound to the vendor Acme Corp."""
    with fresh_database(postgres_admin_url) as url:
        yield url, create_key(url, "acme-ci", "--scopes", "read,write", "--vendor", ACME)


@pytest.fixture(scope="module")
async def acme(
    database_and_key: tuple[str, str], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AsyncTestClient[Any]]:
    """The application with authentication on, and a client with the key bound to Acme Corp."""
    url, key = database_and_key
    index = tmp_path_factory.mktemp("index")
    app = create_app(Settings(database_url=url, db_pool_size=3, auth="writes", sparql_index_dir=index))
    async with local_client(app) as client:
        await until_sparql_answers(client)
        client.headers["Authorization"] = f"Bearer {key}"
        yield client


async def sparql_vendors(client: AsyncTestClient[Any], thing_id: str) -> list[str]:
    query = f"SELECT ?name WHERE {{ <{thing_id}> a lmos:Agent ; lmos:metadata/lmos:vendor/lmos:name ?name }}"
    answer = await client.post("/search/sparql", data={"query": query}, headers=RESULTS)
    assert answer.status_code == 200, answer.text
    return [row["name"]["value"] for row in answer.json()["results"]["bindings"]]


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_a_key_bound_to_a_vendor_cannot_register_another_vendor_in_any_spelling(
    acme: AsyncTestClient[Any], spelling: str
) -> None:
    thing_id = f"urn:spelled:{spelling.replace(' ', '-').replace('@', '')}:impostor"
    refused = await acme.put(f"/things/{thing_id}", json=SPELLINGS[spelling](thing_id, TELEKOM))
    assert refused.status_code == 403, refused.text
    assert refused.json()["rule"] == "vendor"
    assert TELEKOM in refused.json()["detail"]


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_its_own_vendor_is_one_value_for_the_key_the_catalog_and_sparql_in_any_spelling(
    acme: AsyncTestClient[Any], spelling: str
) -> None:
    thing_id = f"urn:spelled:{spelling.replace(' ', '-').replace('@', '')}:own"
    written = await acme.put(f"/things/{thing_id}", json=SPELLINGS[spelling](thing_id, ACME))
    assert written.status_code in (201, 204), written.text
    summary = (await acme.get(f"/api/v1/things/{thing_id}/summary")).json()
    assert summary["kind"] == "agent"
    assert summary["vendor"]["name"] == ACME
    found = await acme.get("/api/v1/search", params={"vendor": ACME, "kind": "agent", "limit": 1000})
    assert thing_id in [item["id"] for item in found.json()["items"]]
    assert await sparql_vendors(acme, thing_id) == [ACME]


MULTIPLE_VENDORS: dict[str, dict[str, Any]] = {
    "two spellings of metadata": {
        "lmos:metadata": {"lmos:vendor": {"lmos:name": ACME}},
        f"{LMOS}/metadata": {"lmos:vendor": {"lmos:name": TELEKOM}},
    },
    "two vendors": {"lmos:metadata": {"lmos:vendor": [{"lmos:name": ACME}, {"lmos:name": TELEKOM}]}},
    "two names": {"lmos:metadata": {"lmos:vendor": {"lmos:name": [ACME, TELEKOM]}}},
    "two spellings of the name": {
        "lmos:metadata": {"lmos:vendor": {"lmos:name": ACME, f"{LMOS}#name": TELEKOM}},
    },
}


@pytest.mark.parametrize("shape", MULTIPLE_VENDORS)
async def test_a_vendor_stated_more_than_once_is_refused(acme: AsyncTestClient[Any], shape: str) -> None:
    thing_id = f"urn:spelled:multiple:{shape.replace(' ', '-')}"
    document = described(thing_id, {"lmos": LMOS}, {"@type": "lmos:Tool", **MULTIPLE_VENDORS[shape]})
    refused = await acme.put(f"/things/{thing_id}", json=document)
    assert refused.status_code == 400, refused.text
    [error] = refused.json()["validationErrors"]
    assert "more than once" in error["description"]
    # Also for a plain thing, and for a writer bound to no vendor.
    plain = {key: value for key, value in document.items() if key != "@type"}
    assert (await acme.put(f"/things/{thing_id}", json=plain)).status_code == 400


async def test_a_vendor_stated_about_another_node_is_refused(acme: AsyncTestClient[Any]) -> None:
    """Metadata given an ``@id`` of its own is about another subject: its statements leave the RDF, so SPARQL would
    see no vendor where the catalog saw one."""
    thing_id = "urn:spelled:metadata-elsewhere"
    document = described(
        thing_id,
        {"lmos": LMOS},
        {"@type": "lmos:Agent", "lmos:metadata": {"@id": "urn:elsewhere", "lmos:vendor": {"lmos:name": ACME}}},
    )
    refused = await acme.put(f"/things/{thing_id}", json=document)
    assert refused.status_code == 400, refused.text
    [error] = refused.json()["validationErrors"]
    assert error["field"] == "lmos:metadata.lmos:vendor.lmos:name"
    assert "in its RDF" in error["description"]
    # Metadata under the description's own id is its own.
    document["lmos:metadata"]["@id"] = f"{thing_id}#metadata"
    assert (await acme.put(f"/things/{thing_id}", json=document)).status_code == 201


async def test_a_patch_cannot_add_a_vendor_in_another_spelling(acme: AsyncTestClient[Any]) -> None:
    thing_id = "urn:spelled:patched"
    assert (await acme.put(f"/things/{thing_id}", json=local_term(thing_id, ACME))).status_code == 201
    patch = {"@context": [TD, {"lmos": LMOS, "vendorName": f"{LMOS}#name", "y": LMOS + "/"}]}
    patch["lmos:metadata"] = {"lmos:vendor": None, "y:vendor": {"vendorName": TELEKOM}}
    refused = await acme.patch(
        f"/things/{thing_id}",
        content=json.dumps(patch),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert refused.status_code == 403, refused.text
    assert refused.json()["rule"] == "vendor"
