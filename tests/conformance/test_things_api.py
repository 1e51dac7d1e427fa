"""Things API CRUD (WoT Discovery §7.3.2.1.2): create, retrieve, update, patch, delete."""

from __future__ import annotations

import re
import secrets
from urllib.parse import quote

import httpx
import pytest

from tests.conformance.conftest import (
    MERGE_PATCH,
    TD_JSON,
    assert_problem,
    assert_validation_problem,
    create,
    media_type,
    mock_td,
    new_id,
    retrieve,
    thing_path,
)

UUID_V4_URN = re.compile(r"^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def post_anonymous(client: httpx.Client, **members: object) -> httpx.Response:
    response = client.post("/things", json=mock_td(**members), headers=TD_JSON)
    assert response.status_code == 201, response.text
    return response


# -- create


def test_tdd_things_create_known_td(client: httpx.Client) -> None:
    td = mock_td(new_id(), title="known")
    create(client, td)
    assert retrieve(client, td["id"])["title"] == "known"


def test_tdd_things_create_known_td_resp(client: httpx.Client) -> None:
    response = client.put(thing_path(new_id()), content=b"", headers=TD_JSON)
    assert_problem(response, 400)
    td = mock_td(new_id())
    assert client.put(thing_path(td["id"]), json=td, headers=TD_JSON).status_code == 201


def test_tdd_things_create_known_td__long_ids(client: httpx.Client) -> None:
    """Ids up to 2 KiB work; longer ones are refused with 400 (PostgreSQL cannot index them), never a 500."""
    long_id = "urn:x:" + secrets.token_hex(1000)  # random, so PostgreSQL cannot compress the index entry
    create(client, mock_td(long_id))
    assert retrieve(client, long_id)["id"] == long_id
    too_long = long_id + "x" * 100
    errors = assert_validation_problem(client.put(thing_path(too_long), json=mock_td(too_long), headers=TD_JSON))
    assert errors[0]["field"] == "id"


def test_tdd_things_create_known_contenttype(client: httpx.Client) -> None:
    for content_type in ("application/td+json", "application/json", "application/td+json; charset=utf-8"):
        td = mock_td(new_id())
        response = client.put(thing_path(td["id"]), json=td, headers={"content-type": content_type})
        assert response.status_code == 201, (content_type, response.text)


def test_tdd_things_create_known_vs_anonymous(client: httpx.Client) -> None:
    with_id = mock_td(new_id())
    assert_problem(client.post("/things", json=with_id, headers=TD_JSON), 400)
    assert client.get(thing_path(with_id["id"])).status_code == 404
    without_id = mock_td()
    assert_problem(client.put(thing_path(new_id()), json=without_id, headers=TD_JSON), 400)
    assert client.post("/things", json=without_id, headers=TD_JSON).status_code == 201


def test_tdd_things_create_known_vs_anonymous__put_id_mismatch(client: httpx.Client) -> None:
    td = mock_td(new_id())
    other = new_id()
    problem = assert_problem(client.put(thing_path(other), json=td, headers=TD_JSON), 400)
    assert td["id"] in problem["detail"]
    assert other in problem["detail"]
    assert client.get(thing_path(other)).status_code == 404
    assert client.get(thing_path(td["id"])).status_code == 404


def test_tdd_things_create_anonymous_td(client: httpx.Client) -> None:
    location = post_anonymous(client, title="anonymous one").headers["location"]
    assert retrieve(client, location)["title"] == "anonymous one"


def test_tdd_things_create_anonymous_contenttype(client: httpx.Client) -> None:
    for content_type in ("application/td+json", "application/json"):
        response = client.post("/things", json=mock_td(), headers={"content-type": content_type})
        assert response.status_code == 201, (content_type, response.text)


def test_tdd_things_create_anonymous_id(client: httpx.Client) -> None:
    first = post_anonymous(client).headers["location"]
    second = post_anonymous(client).headers["location"]
    assert first != second
    assert retrieve(client, first)["id"] == first


def test_tdd_things_create_anonymous_td_resp(client: httpx.Client) -> None:
    response = post_anonymous(client)
    location = response.headers["location"]
    # The bare local id, resolved against /things/ (what the farshidtz suite and LinkSmart/Domus do).
    assert client.get(thing_path(location)).status_code == 200
    assert response.content == b""


def test_tdd_anonymous_td_local_uuid(client: httpx.Client) -> None:
    assert UUID_V4_URN.match(post_anonymous(client).headers["location"])


def test_tdd_anonymous_td_identifier(client: httpx.Client) -> None:
    location = post_anonymous(client, title="listed anonymous").headers["location"]
    assert retrieve(client, location)["id"] == location
    listing = client.get("/things").json()
    assert [td["id"] for td in listing if td["id"] == location] == [location]


def test_tdd_anonymous_td_identifier__replace_keeps_local_id(client: httpx.Client) -> None:
    location = post_anonymous(client).headers["location"]
    replacement = mock_td(location, title="replaced anonymous")
    assert client.put(thing_path(location), json=replacement, headers=TD_JSON).status_code == 204
    assert retrieve(client, location)["title"] == "replaced anonymous"


# -- retrieve


def test_tdd_things_retrieve(client: httpx.Client) -> None:
    td = mock_td(new_id(), title="retrievable", description="ä ✓ 𝄞")
    create(client, td)
    body = retrieve(client, td["id"])
    assert body["id"] == td["id"]
    assert body["title"] == "retrievable"
    assert body["description"] == "ä ✓ 𝄞"


def test_tdd_things_retrieve__unknown_id_404(client: httpx.Client) -> None:
    assert_problem(client.get(thing_path(new_id())), 404)


@pytest.mark.parametrize(
    "thing_id",
    [
        "urn:uuid:0b4e1f7c-65a3-4d39-9a47-19ad1f1e9a11",
        "https://example.com/things/a/b",
        "http://example.com:8080/x/y?z",
        "urn:dev:ops:32473-Thing-ÄÖÜ",
        "urn:example:with%20percent",
        "tag:example.com,2024:thing#frag",
    ],
)
def test_tdd_things_retrieve__ids_with_colons_and_slashes(client: httpx.Client, thing_id: str) -> None:
    """Ids are URIs: colons, slashes, ``//``, ``?``, ``#`` and non-ASCII all work once percent-encoded."""
    encoded = "/things/" + quote(thing_id, safe=":/@!$&'()*+,;=")
    td = mock_td(thing_id)
    assert client.put(encoded, json=td, headers=TD_JSON).status_code in (201, 204)
    response = client.get(encoded)
    assert response.status_code == 200, response.text
    assert response.json()["id"] == thing_id
    assert client.patch(encoded, json={"title": "patched"}, headers=MERGE_PATCH).status_code == 204
    assert client.get(encoded).json()["title"] == "patched"
    assert any(item["id"] == thing_id for item in client.get("/things").json())
    assert client.delete(encoded).status_code == 204
    assert client.get(encoded).status_code == 404


def test_tdd_things_retrieve__unencoded_slashes_in_path(client: httpx.Client) -> None:
    """Clients that send ``https://`` ids unencoded (as the farshidtz suite does with urns) still match."""
    thing_id = f"https://example.com/{new_id('')}/a/b"
    create(client, mock_td(thing_id))
    response = client.get("/things/" + thing_id)
    assert response.status_code == 200
    assert response.json()["id"] == thing_id


def test_tdd_things_retrieve_resp(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    response = client.get(thing_path(td["id"]))
    assert response.status_code == 200
    assert response.json()["title"] == td["title"]


def test_tdd_things_retrieve_resp_content_type(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    assert media_type(client.get(thing_path(td["id"]))) == "application/td+json"


def test_tdd_things_retrieve__etag(client: httpx.Client) -> None:
    td = mock_td(new_id())
    etag = create(client, td).headers["etag"]
    response = client.get(thing_path(td["id"]))
    assert response.headers["etag"] == etag
    assert client.patch(thing_path(td["id"]), json={"title": "x"}, headers=MERGE_PATCH).headers["etag"] != etag
    assert client.get(thing_path(td["id"])).headers["etag"] != etag


# -- update


def test_tdd_things_update(client: httpx.Client) -> None:
    td = mock_td(new_id(), title="before", description="to be dropped")
    create(client, td)
    replacement = mock_td(td["id"], title="after")
    assert client.put(thing_path(td["id"]), json=replacement, headers=TD_JSON).status_code == 204
    body = retrieve(client, td["id"])
    assert body["title"] == "after"
    assert "description" not in body


def test_tdd_things_update_contenttype(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    for content_type in ("application/td+json", "application/json"):
        response = client.put(thing_path(td["id"]), json=td, headers={"content-type": content_type})
        assert response.status_code == 204, response.text
    assert_problem(client.put(thing_path(td["id"]), json=td, headers={"content-type": "text/plain"}), 415)


def test_tdd_things_update_resp(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    response = client.put(thing_path(td["id"]), json=td, headers=TD_JSON)
    assert response.status_code == 204
    assert response.content == b""


def test_tdd_things_update__invalid_replacement_keeps_old(client: httpx.Client) -> None:
    td = mock_td(new_id(), title="kept")
    create(client, td)
    invalid = {key: value for key, value in td.items() if key != "title"}
    assert_validation_problem(client.put(thing_path(td["id"]), json=invalid, headers=TD_JSON))
    assert retrieve(client, td["id"])["title"] == "kept"


def test_tdd_things_update__if_match(client: httpx.Client) -> None:
    """If-Match on PUT, PATCH and DELETE: 412 with the current ETag on mismatch, nothing changed."""
    td = mock_td(new_id(), title="v1")
    etag = create(client, td).headers["etag"]
    stale = '"0"'
    problem = client.put(thing_path(td["id"]), json=td, headers={**TD_JSON, "if-match": stale})
    assert_problem(problem, 412)
    assert problem.headers["etag"] == etag
    assert_problem(
        client.patch(thing_path(td["id"]), json={"title": "x"}, headers={**MERGE_PATCH, "if-match": stale}), 412
    )
    assert_problem(client.delete(thing_path(td["id"]), headers={"if-match": stale}), 412)
    assert retrieve(client, td["id"])["title"] == "v1"
    updated = client.put(
        thing_path(td["id"]), json=mock_td(td["id"], title="v2"), headers={**TD_JSON, "if-match": etag}
    )
    assert updated.status_code == 204
    new_etag = updated.headers["etag"]
    patched = client.patch(
        thing_path(td["id"]), json={"title": "v3"}, headers={**MERGE_PATCH, "if-match": f'"nope", {new_etag}'}
    )
    assert patched.status_code == 204
    assert client.delete(thing_path(td["id"]), headers={"if-match": "*"}).status_code == 204
    assert_problem(client.put(thing_path(td["id"]), json=td, headers={**TD_JSON, "if-match": "*"}), 412)


# -- partial update


def test_tdd_things_update_partial(client: httpx.Client) -> None:
    td = mock_td(new_id(), title="whole")
    create(client, td)
    assert client.patch(thing_path(td["id"]), json={"title": "part"}, headers=MERGE_PATCH).status_code == 204
    body = retrieve(client, td["id"])
    assert body["title"] == "part"
    assert body["security"] == ["nosec_sc"]


def test_tdd_things_update_partial_mergepatch(client: httpx.Client) -> None:
    """RFC 7396: members replace, null removes, objects merge recursively, arrays are replaced whole."""
    td = mock_td(
        new_id(),
        description="remove me",
        properties={"status": {"type": "string", "forms": [{"href": "https://a.example/status"}]}},
        tags=["a", "b"],
    )
    create(client, td)
    patch = {
        "description": None,
        "properties": {"level": {"type": "integer", "forms": [{"href": "https://a.example/level"}]}},
        "tags": ["c"],
    }
    assert client.patch(thing_path(td["id"]), json=patch, headers=MERGE_PATCH).status_code == 204
    body = retrieve(client, td["id"])
    assert "description" not in body
    assert set(body["properties"]) == {"status", "level"}
    assert body["tags"] == ["c"]
    forms = {"forms": [{"href": "https://b.example/status"}]}
    client.patch(thing_path(td["id"]), json={"properties": {"status": forms}}, headers=MERGE_PATCH)
    assert retrieve(client, td["id"])["properties"]["status"]["forms"] == forms["forms"]


def test_tdd_things_update_partial_contenttype(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    for content_type in ("application/json", "application/td+json", "text/plain"):
        response = client.patch(thing_path(td["id"]), json={"title": "no"}, headers={"content-type": content_type})
        assert_problem(response, 415)
        assert "application/merge-patch+json" in response.headers.get("accept-patch", "")
    assert retrieve(client, td["id"])["title"] == td["title"]


def test_tdd_things_update_partial_partialtd(client: httpx.Client) -> None:
    """The merged result is validated: removing a required member is a 400 with validationErrors."""
    td = mock_td(new_id())
    create(client, td)
    errors = assert_validation_problem(client.patch(thing_path(td["id"]), json={"title": None}, headers=MERGE_PATCH))
    assert any("title" in error["description"] for error in errors)
    assert_validation_problem(
        client.patch(thing_path(td["id"]), json={"security": "undefined_sc"}, headers=MERGE_PATCH)
    )
    assert_problem(client.patch(thing_path(td["id"]), json={"id": new_id()}, headers=MERGE_PATCH), 400)
    assert_problem(client.patch(thing_path(td["id"]), json=["title"], headers=MERGE_PATCH), 400)
    assert retrieve(client, td["id"])["title"] == td["title"]


def test_tdd_things_update_partial_resp(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    response = client.patch(thing_path(td["id"]), json={"title": "x"}, headers=MERGE_PATCH)
    assert response.status_code == 204
    assert response.content == b""


def test_tdd_things_update_partial__unknown_id_404(client: httpx.Client) -> None:
    thing_id = new_id()
    assert_problem(client.patch(thing_path(thing_id), json={"title": "x"}, headers=MERGE_PATCH), 404)
    assert client.get(thing_path(thing_id)).status_code == 404


# -- delete


def test_tdd_things_delete(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    client.delete(thing_path(td["id"]))
    assert_problem(client.get(thing_path(td["id"])), 404)
    assert all(item["id"] != td["id"] for item in client.get("/things").json())


def test_tdd_things_delete_resp(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    response = client.delete(thing_path(td["id"]))
    assert response.status_code == 204
    assert response.content == b""
    assert_problem(client.delete(thing_path(td["id"])), 404)


# -- the API as a whole


def test_tdd_things_crud(client: httpx.Client) -> None:
    td = mock_td(new_id())
    assert client.put(thing_path(td["id"]), json=td, headers=TD_JSON).status_code == 201
    assert client.get(thing_path(td["id"])).status_code == 200
    assert client.put(thing_path(td["id"]), json=td, headers=TD_JSON).status_code == 204
    assert client.patch(thing_path(td["id"]), json={}, headers=MERGE_PATCH).status_code == 204
    assert client.delete(thing_path(td["id"])).status_code == 204


def test_tdd_things_crudl(client: httpx.Client) -> None:
    td = mock_td(new_id())
    create(client, td)
    assert td["id"] in {item["id"] for item in client.get("/things").json()}
    client.delete(thing_path(td["id"]))
    assert td["id"] not in {item["id"] for item in client.get("/things").json()}


def test_tdd_things_default_representation(client: httpx.Client) -> None:
    """Bodies are JSON with JSON-LD 1.1 syntax: an ``@context`` on every TD served."""
    td = mock_td(new_id())
    create(client, td)
    assert "@context" in retrieve(client, td["id"])
    listing = client.get("/things")
    assert all("@context" in item for item in listing.json())
    assert media_type(listing) == "application/ld+json"
