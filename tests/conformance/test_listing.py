"""Listing and pagination (WoT Discovery §7.3.2.1.3), on servers with a database of their own: one holding exactly
the TDs of ``IDS_IN_CODE_POINT_ORDER`` that the reading tests of this module share, and an empty one for each test
that writes."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.conformance.conftest import MERGE_PATCH, TD_JSON, assert_problem, links, media_type, mock_td
from tests.support.servers import ServerProcess, fresh_database

#: Code-point order differs from UTF-16 order (𝄞 is a surrogate pair) and from locale order (case, accents).
IDS_IN_CODE_POINT_ORDER = [
    "urn:x:A",
    "urn:x:Z",
    "urn:x:a",
    "urn:x:b",
    "urn:x:z",
    "urn:x:é",
    "urn:x:\uffee",
    "urn:x:𝄞",
]


def register_shuffled(server: ServerProcess) -> None:
    """Register the TDs of ``IDS_IN_CODE_POINT_ORDER`` on ``server``, out of order."""
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        for thing_id in [*IDS_IN_CODE_POINT_ORDER[3:], *reversed(IDS_IN_CODE_POINT_ORDER[:3])]:
            assert client.put(f"/things/{thing_id}", json=mock_td(thing_id), headers=TD_JSON).status_code == 201


@pytest.fixture(scope="module")
def listing_server(postgres_admin_url: str) -> Iterator[ServerProcess]:
    """A server holding exactly the TDs of ``IDS_IN_CODE_POINT_ORDER``, registered shuffled; the tests given it only
    read."""
    with fresh_database(postgres_admin_url) as url, ServerProcess(url) as process:
        register_shuffled(process)
        yield process


@pytest.fixture
def listed(listing_server: ServerProcess) -> Iterator[httpx.Client]:
    """A client of ``listing_server`` (read only)."""
    with httpx.Client(base_url=listing_server.base_url, timeout=30) as client:
        yield client


@pytest.fixture
def listed_to_change(empty_server: ServerProcess) -> Iterator[httpx.Client]:
    """A client of a server of this test alone holding exactly the TDs of ``IDS_IN_CODE_POINT_ORDER``."""
    register_shuffled(empty_server)
    with httpx.Client(base_url=empty_server.base_url, timeout=30) as client:
        yield client


def ids(response: httpx.Response) -> list[str]:
    return [td["id"] for td in response.json()]


def follow(client: httpx.Client, url: str) -> tuple[list[str], list[httpx.Response]]:
    """All ids reached by following ``next`` links from ``url``."""
    seen: list[str] = []
    pages: list[httpx.Response] = []
    next_url: str | None = url
    while next_url:
        response = client.get(next_url)
        assert response.status_code == 200, response.text
        pages.append(response)
        seen.extend(ids(response))
        next_url = links(response).get("next", {}).get("url")
        assert len(pages) <= len(IDS_IN_CODE_POINT_ORDER) + 1
    return seen, pages


def test_tdd_things_list_only(client: httpx.Client) -> None:
    assert client.get("/things").status_code == 200


def test_tdd_things_list_method(client: httpx.Client) -> None:
    response = client.get("/things")
    assert response.status_code == 200
    assert isinstance(response.json(), list)


def test_tdd_things_list_resp(listed: httpx.Client) -> None:
    response = listed.get("/things")
    assert response.status_code == 200
    body = response.json()
    assert isinstance(body, list)
    assert all(isinstance(td, dict) and td["title"] == "example thing" for td in body)
    assert len(body) == len(IDS_IN_CODE_POINT_ORDER)


def test_tdd_things_list_resp_content_type(client: httpx.Client) -> None:
    assert media_type(client.get("/things")) == "application/ld+json"
    assert media_type(client.get("/things?limit=1")) == "application/ld+json"
    assert media_type(client.get("/things?format=collection")) == "application/ld+json"


def test_tdd_things_list_resp__empty(empty_server: ServerProcess) -> None:
    response = httpx.get(empty_server.base_url + "/things")
    assert response.status_code == 200
    assert response.json() == []
    collection = httpx.get(empty_server.base_url + "/things?format=collection").json()
    assert collection["total"] == 0
    assert collection["members"] == []


def test_tdd_things_list_resp__no_paging_without_limit(listed: httpx.Client) -> None:
    response = listed.get("/things")
    assert ids(response) == IDS_IN_CODE_POINT_ORDER
    assert "next" not in links(response)


def test_tdd_things_list_pagination(listed: httpx.Client) -> None:
    seen, pages = follow(listed, "/things?limit=3")
    assert seen == IDS_IN_CODE_POINT_ORDER
    assert [len(ids(page)) for page in pages] == [3, 3, 2]


def test_tdd_things_list_pagination_limit(listed: httpx.Client) -> None:
    for limit in (1, 2, 5, 8, 50):
        assert len(ids(listed.get(f"/things?limit={limit}"))) == min(limit, len(IDS_IN_CODE_POINT_ORDER))
    assert ids(listed.get("/things?limit=2&offset=6")) == IDS_IN_CODE_POINT_ORDER[6:]
    assert ids(listed.get("/things?offset=7")) == IDS_IN_CODE_POINT_ORDER[7:]
    assert ids(listed.get("/things?limit=2&offset=100")) == []
    assert ids(listed.get(f"/things?limit=2&offset={2**63 - 1}")) == []


def test_tdd_things_list_pagination__invalid_arguments(client: httpx.Client) -> None:
    for query in ("limit=0", "limit=-1", "limit=abc", "offset=-1", "offset=x", "format=xml", "sort_by=id", "limit="):
        problem = assert_problem(client.get(f"/things?{query}"), 400)
        assert query.split("=")[0] in problem["detail"]


def test_tdd_things_list_pagination_header_nextlink(listed: httpx.Client) -> None:
    assert "next" in links(listed.get("/things?limit=7"))
    assert "next" not in links(listed.get("/things?limit=8"))
    assert "next" not in links(listed.get("/things?limit=4&offset=4"))


def test_tdd_things_list_pagination_header_nextlink_attr(listed: httpx.Client) -> None:
    next_url = links(listed.get("/things?limit=3&offset=1"))["next"]["url"]
    query = parse_qs(urlsplit(next_url).query)
    assert query["limit"] == ["3"]
    assert query["offset"] == ["4"]
    collection_next = links(listed.get("/things?limit=3&format=collection"))["next"]["url"]
    assert parse_qs(urlsplit(collection_next).query)["format"] == ["collection"]


def test_tdd_things_list_pagination_header_nextlink_base(listed: httpx.Client) -> None:
    """Relative to the API base: resolving it against the request URL reaches the next page."""
    response = listed.get("/things?limit=3")
    next_url = links(response)["next"]["url"]
    assert next_url.startswith("/things?") or next_url.startswith(str(listed.base_url))
    assert ids(listed.get(str(response.url.join(next_url)))) == IDS_IN_CODE_POINT_ORDER[3:6]


def test_tdd_things_list_pagination_header_canonicallink(listed_to_change: httpx.Client) -> None:
    first = links(listed_to_change.get("/things?limit=3"))["canonical"]
    assert first["url"] == "/things"
    assert first["etag"]
    assert links(listed_to_change.get("/things?limit=3&offset=3"))["canonical"]["etag"] == first["etag"]
    listed_to_change.patch("/things/urn:x:a", json={"title": "changed"}, headers=MERGE_PATCH)
    second = links(listed_to_change.get("/things?limit=3"))["canonical"]
    assert second["etag"] != first["etag"]
    listed_to_change.delete("/things/urn:x:b")
    assert links(listed_to_change.get("/things?limit=3"))["canonical"]["etag"] not in {
        first["etag"],
        second["etag"],
    }


def test_tdd_things_list_pagination_order_default(listed: httpx.Client) -> None:
    assert ids(listed.get("/things")) == IDS_IN_CODE_POINT_ORDER
    assert follow(listed, "/things?limit=2")[0] == IDS_IN_CODE_POINT_ORDER
    assert [td["id"] for td in listed.get("/things?format=collection").json()["members"]] == IDS_IN_CODE_POINT_ORDER


def test_tdd_things_list_pagination_collection(listed: httpx.Client) -> None:
    response = listed.get("/things?limit=3&offset=3&format=collection")
    assert response.status_code == 200
    body = response.json()
    assert body["@context"] == "https://www.w3.org/2022/wot/discovery"
    assert body["@type"] == "ThingCollection"
    assert body["total"] == len(IDS_IN_CODE_POINT_ORDER)
    assert [td["id"] for td in body["members"]] == IDS_IN_CODE_POINT_ORDER[3:6]
    assert parse_qs(urlsplit(body["@id"]).query) == {"offset": ["3"], "limit": ["3"], "format": ["collection"]}
    assert parse_qs(urlsplit(body["next"]).query) == {
        "offset": ["6"],
        "limit": ["3"],
        "after": [IDS_IN_CODE_POINT_ORDER[5]],
        "format": ["collection"],
    }
    last = listed.get(body["next"]).json()
    assert "next" not in last
    assert [td["id"] for td in last["members"]] == IDS_IN_CODE_POINT_ORDER[6:]
    whole = listed.get("/things?format=collection").json()
    assert whole["total"] == len(whole["members"]) == len(IDS_IN_CODE_POINT_ORDER)
    assert "next" not in whole


def test_a_listing_larger_than_one_send_is_one_valid_document(empty_server: ServerProcess) -> None:
    """The server sends a listing in pieces of about 64 KiB; each boundary falls between two descriptions."""
    thing_ids = [f"urn:x:large:{index:02d}" for index in range(24)]
    with httpx.Client(base_url=empty_server.base_url, timeout=30) as client:
        for index, thing_id in enumerate(thing_ids):
            td = {**mock_td(thing_id), "description": f"{index} " + "long " * 2000}
            assert client.put(f"/things/{thing_id}", json=td, headers=TD_JSON).status_code == 201
        listing = client.get("/things")
        assert len(listing.content) > 3 * 64 * 1024
        assert ids(listing) == thing_ids
        assert [td["description"].split()[0] for td in listing.json()] == [str(index) for index in range(24)]
        collection = client.get("/things?format=collection&limit=20").json()
        assert [td["id"] for td in collection["members"]] == thing_ids[:20]
        assert collection["total"] == 24
        assert ids(client.get("/things?offset=20&limit=20")) == thing_ids[20:]


def test_tdd_things_list_pagination__next_links_seek_to_the_same_pages_as_offsets(listed: httpx.Client) -> None:
    """A next link carries the page's last id (``after``) beside its offset: followed, it gives the very pages a
    client computing offsets gets."""
    seen, pages = follow(listed, "/things?limit=3")
    for number, page in enumerate(pages):
        assert ids(page) == ids(listed.get(f"/things?offset={3 * number}&limit=3"))
    assert seen == IDS_IN_CODE_POINT_ORDER
    next_url = links(pages[0])["next"]["url"]
    assert parse_qs(urlsplit(next_url).query)["after"] == [IDS_IN_CODE_POINT_ORDER[2]]
    # An id that is not stored is a position between two that are.
    assert ids(listed.get("/things?limit=3&after=urn:x:c")) == IDS_IN_CODE_POINT_ORDER[4:7]
    assert ids(listed.get("/things?limit=3&after=urn:y")) == []
    assert ids(listed.get("/things?after=urn:x:b")) == IDS_IN_CODE_POINT_ORDER[4:]


def test_tdd_things_list_pagination__walk_while_descriptions_come_and_go(listed_to_change: httpx.Client) -> None:
    """Between pages, a description already listed is removed and one is added behind or ahead of the walk:
    following next links lists every description present when the walk began exactly once, in order, and an
    added one at most once (offsets would shift: a removal behind skips one, an addition behind repeats one)."""
    client = listed_to_change
    added = iter(["urn:x:0", "urn:x:zz", "urn:x:B", "urn:x:c"])
    seen: list[str] = []
    next_url: str | None = "/things?limit=2"
    while next_url:
        response = client.get(next_url)
        assert response.status_code == 200, response.text
        page = ids(response)
        assert 1 <= len(page) <= 2
        seen.extend(page)
        new = next(added, None)
        if new is not None:
            assert client.put(f"/things/{new}", json=mock_td(new), headers=TD_JSON).status_code == 201
            assert client.delete(f"/things/{page[0]}").status_code == 204
        next_url = links(response).get("next", {}).get("url")
    assert seen == sorted(seen, key=lambda thing_id: thing_id.encode())
    assert len(seen) == len(set(seen))
    assert [thing_id for thing_id in seen if thing_id in IDS_IN_CODE_POINT_ORDER] == IDS_IN_CODE_POINT_ORDER
    assert "urn:x:zz" in seen  # added ahead of the walk
    assert not {"urn:x:0", "urn:x:B", "urn:x:c"} & set(seen)  # added behind it


@pytest.mark.parametrize(
    "after",
    ["", "%00", "urn:x:%00", "x" * 2049, "%ED%A0%80", "%FF%FE", "%F0%9D%84" + "x" * 5],
    ids=["empty", "nul", "nul-inside", "too-long", "surrogate", "not-utf8", "cut-utf8"],
)
def test_tdd_things_list_pagination__hostile_after_is_a_problem(listed: httpx.Client, after: str) -> None:
    response = listed.get(f"/things?limit=2&after={after}")
    if response.status_code == 200 and "%" in after and "%00" not in after:
        # Bytes that are not UTF-8 are read as replacement characters: then a position like any other.
        assert isinstance(response.json(), list)
        return
    problem = assert_problem(response, 400)
    assert "after" in problem["detail"]
