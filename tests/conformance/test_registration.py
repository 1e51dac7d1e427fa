"""Registration information and expiry (WoT Discovery §7.3.2.1.4 and §7.3.2.1.8)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Callable

import asyncpg
import httpx

from tests.conformance.conftest import (
    DISCOVERY_CONTEXT,
    MERGE_PATCH,
    RFC3339,
    TD11_CONTEXT,
    TD_JSON,
    assert_problem,
    assert_validation_problem,
    create,
    mock_td,
    new_id,
    retrieve,
    thing_path,
)
from tests.support.servers import ServerProcess


def moment(value: str) -> dt.datetime:
    assert RFC3339.match(value), value
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def registration_of(client: httpx.Client, thing_id: str) -> dict[str, object]:
    registration: dict[str, object] = retrieve(client, thing_id)["registration"]
    return registration


def test_tdd_context_injection(client: httpx.Client) -> None:
    """A string @context becomes an array ending in the discovery context; an array gets it appended once."""
    as_string = mock_td(new_id())
    create(client, as_string)
    assert retrieve(client, as_string["id"])["@context"] == [as_string["@context"], DISCOVERY_CONTEXT]
    as_array = mock_td(new_id(), **{"@context": [TD11_CONTEXT, {"ex": "https://example.com/"}]})
    create(client, as_array)
    assert retrieve(client, as_array["id"])["@context"] == [*as_array["@context"], DISCOVERY_CONTEXT]
    already = mock_td(new_id(), **{"@context": [TD11_CONTEXT, DISCOVERY_CONTEXT]})
    create(client, already)
    assert retrieve(client, already["id"])["@context"] == already["@context"]
    listed = {td["id"]: td for td in client.get("/things").json()}
    assert listed[as_string["id"]]["@context"] == [as_string["@context"], DISCOVERY_CONTEXT]


def test_tdd_absolute_time(client: httpx.Client) -> None:
    td = mock_td(new_id(), registration={"ttl": 3600})
    create(client, td)
    registration = registration_of(client, td["id"])
    for member in ("created", "modified", "expires", "retrieved"):
        value = registration[member]
        assert isinstance(value, str)
        assert moment(value).utcoffset() is not None


def test_tdd_registrationinfo_vocab_created(client: httpx.Client) -> None:
    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)
    td = mock_td(new_id())
    create(client, td)
    created = registration_of(client, td["id"])["created"]
    assert isinstance(created, str)
    assert before <= moment(created) <= dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5)
    client.put(thing_path(td["id"]), json=td, headers=TD_JSON)
    client.patch(thing_path(td["id"]), json={"title": "y"}, headers=MERGE_PATCH)
    assert registration_of(client, td["id"])["created"] == created


def test_tdd_registrationinfo_vocab_created__client_value_ignored(client: httpx.Client) -> None:
    td = mock_td(new_id(), registration={"created": "2001-01-01T00:00:00Z", "modified": "2001-01-01T00:00:00Z"})
    create(client, td)
    registration = registration_of(client, td["id"])
    assert not str(registration["created"]).startswith("2001")
    assert not str(registration["modified"]).startswith("2001")


def test_tdd_registrationinfo_vocab_modified(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    first = registration_of(client, td["id"])
    assert first["modified"] >= first["created"]  # type: ignore[operator]
    time.sleep(0.01)
    client.patch(thing_path(td["id"]), json={"title": "later"}, headers=MERGE_PATCH)
    second = registration_of(client, td["id"])
    assert moment(str(second["modified"])) > moment(str(first["modified"]))


def test_tdd_registrationinfo_vocab_expires(client: httpx.Client) -> None:
    """Without a ttl the client's expires is kept; with one it is ignored and computed."""
    expires = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)).replace(microsecond=0)
    td = mock_td(new_id(), registration={"expires": expires.isoformat()})
    create(client, td)
    registration = registration_of(client, td["id"])
    assert moment(str(registration["expires"])) == expires
    assert "ttl" not in registration
    both = mock_td(new_id(), registration={"ttl": 60, "expires": "2099-01-01T00:00:00Z"})
    create(client, both)
    registration = registration_of(client, both["id"])
    assert moment(str(registration["expires"])) < dt.datetime.now(dt.UTC) + dt.timedelta(seconds=120)
    client.delete(thing_path(both["id"]))  # expiring soon: keep the shared database free of purges


def test_tdd_registrationinfo_vocab_expires__invalid(client: httpx.Client) -> None:
    for expires in ("2001-01-01T00:00:00Z", "tomorrow", "2099-01-01T00:00:00"):
        td = mock_td(new_id(), registration={"expires": expires})
        assert_validation_problem(client.put(thing_path(td["id"]), json=td, headers=TD_JSON))


def test_tdd_registrationinfo_vocab_ttl(client: httpx.Client) -> None:
    """expires = modified + ttl, recomputed on each write."""
    td = mock_td(new_id(), registration={"ttl": 3600})
    create(client, td)
    registration = registration_of(client, td["id"])
    assert registration["ttl"] == 3600
    assert moment(str(registration["expires"])) - moment(str(registration["modified"])) == dt.timedelta(hours=1)
    for ttl in (0, -5, "60", True, 1e12, 1e300):
        invalid = mock_td(new_id(), registration={"ttl": ttl})
        assert_validation_problem(client.put(thing_path(invalid["id"]), json=invalid, headers=TD_JSON))


def test_tdd_registrationinfo_vocab_ttl__patch_empty_renews(client: httpx.Client) -> None:
    td = mock_td(new_id(), registration={"ttl": 600})
    create(client, td)
    first = registration_of(client, td["id"])
    time.sleep(0.05)
    assert client.patch(thing_path(td["id"]), json={}, headers=MERGE_PATCH).status_code == 204
    second = registration_of(client, td["id"])
    assert second["ttl"] == 600
    assert moment(str(second["expires"])) > moment(str(first["expires"]))
    assert moment(str(second["expires"])) - moment(str(second["modified"])) == dt.timedelta(seconds=600)


def test_tdd_registrationinfo_vocab_ttl__patch_changes_and_removes(client: httpx.Client) -> None:
    td = mock_td(new_id(), registration={"ttl": 600})
    create(client, td)
    client.patch(thing_path(td["id"]), json={"registration": {"ttl": 60}}, headers=MERGE_PATCH)
    assert registration_of(client, td["id"])["ttl"] == 60
    client.patch(thing_path(td["id"]), json={"registration": None}, headers=MERGE_PATCH)
    registration = registration_of(client, td["id"])
    assert "ttl" not in registration
    assert "expires" not in registration


def test_tdd_registrationinfo_vocab_retrieved(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    before = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=5)
    retrieved = moment(str(registration_of(client, td["id"])["retrieved"]))
    assert before <= retrieved <= dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5)
    listed = next(item for item in client.get("/things").json() if item["id"] == td["id"])
    assert moment(listed["registration"]["retrieved"]) >= retrieved


def test_tdd_registrationinfo_expiry_purge(isolated_server: Callable[[dict[str, str]], ServerProcess]) -> None:
    """An expired TD is never served, and the purger deletes its row."""
    server = isolated_server({"REGISTRY_PURGE_INTERVAL": "0.5"})
    td = mock_td(new_id(), registration={"ttl": 1})
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        create(client, td)
        assert client.get(thing_path(td["id"])).status_code == 200
        deadline = time.monotonic() + 10
        while row_exists(server.database_url, td["id"]) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert not row_exists(server.database_url, td["id"])
        assert_problem(client.get(thing_path(td["id"])), 404)


def test_tdd_registrationinfo_expiry_purge__expired_never_served(client: httpx.Client) -> None:
    """Between expiry and the next purge (60 s by default) the TD is already gone from every read."""
    td = mock_td(new_id(), registration={"ttl": 0.5})
    create(client, td)
    collection = client.get("/things?format=collection").json()
    assert td["id"] in {item["id"] for item in collection["members"]}
    time.sleep(0.7)
    assert_problem(client.get(thing_path(td["id"])), 404)
    assert td["id"] not in {item["id"] for item in client.get("/things").json()}
    after = client.get("/things?format=collection").json()
    assert after["total"] == len(after["members"])
    assert_problem(client.patch(thing_path(td["id"]), json={}, headers=MERGE_PATCH), 404)
    assert_problem(client.delete(thing_path(td["id"])), 404)
    assert client.put(thing_path(td["id"]), json=mock_td(td["id"]), headers=TD_JSON).status_code == 201


def test_tdd_registrationinfo_expiry_config__max_ttl(
    isolated_server: Callable[[dict[str, str]], ServerProcess],
) -> None:
    server = isolated_server({"REGISTRY_MAX_TTL": "60"})
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        too_long = mock_td(new_id(), registration={"ttl": 61})
        errors = assert_validation_problem(client.put(thing_path(too_long["id"]), json=too_long, headers=TD_JSON))
        assert any(error["field"] == "registration.ttl" for error in errors)
        far = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).isoformat()
        too_late = mock_td(new_id(), registration={"expires": far})
        assert_validation_problem(client.put(thing_path(too_late["id"]), json=too_late, headers=TD_JSON))
        create(client, mock_td(new_id(), registration={"ttl": 60}))


def test_tdd_registrationinfo_expiry_config__mandate_ttl(
    isolated_server: Callable[[dict[str, str]], ServerProcess],
) -> None:
    server = isolated_server({"REGISTRY_MANDATE_TTL": "true"})
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        without = mock_td(new_id())
        errors = assert_validation_problem(client.put(thing_path(without["id"]), json=without, headers=TD_JSON))
        assert any(error["field"] == "registration.ttl" for error in errors)
        assert_validation_problem(client.post("/things", json=mock_td(), headers=TD_JSON))
        with_ttl = mock_td(new_id(), registration={"ttl": 30})
        create(client, with_ttl)
        assert client.patch(thing_path(with_ttl["id"]), json={}, headers=MERGE_PATCH).status_code == 204
        removal = client.patch(thing_path(with_ttl["id"]), json={"registration": None}, headers=MERGE_PATCH)
        assert_validation_problem(removal)


def row_exists(database_url: str, thing_id: str) -> bool:
    async def query() -> bool:
        connection = await asyncpg.connect(database_url)
        try:
            return bool(await connection.fetchval("SELECT count(*) FROM descriptions WHERE id = $1", thing_id))
        finally:
            await connection.close()

    return asyncio.run(query())
