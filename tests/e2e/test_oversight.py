"""What the dashboard's operator panels read: quality, the latest changes, listing by expiry, a stream resumed
from a query parameter."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.things import thing, versioned_tool


def test_quality_lists_lint_warnings_and_questionable_bumps(client: httpx.Client) -> None:
    thing_id = f"urn:test:quality:{thing()['id']}"
    assert client.put(f"/things/{thing_id}", json=versioned_tool(thing_id, "1.0.0", [])).status_code == 201
    # A new required input breaks callers, yet the version claims a patch: breaking and dishonest.
    assert client.put(f"/things/{thing_id}", json=versioned_tool(thing_id, "1.0.1", ["q"])).status_code == 204
    report = client.get("/api/v1/quality", params={"limit": 1000}).json()
    [bump] = [bump for bump in report["bumps"] if bump["id"] == thing_id]
    assert (bump["version"], bump["previous_version"], bump["verdict"], bump["honest"]) == (
        "1.0.1",
        "1.0.0",
        "breaking",
        False,
    )
    [linted] = [item for item in report["lint"] if item["id"] == thing_id]
    assert linted["warnings"]
    assert all(set(warning) == {"code", "message", "field"} for warning in linted["warnings"])
    assert client.get("/api/v1/quality", params={"limit": 0}).status_code == 400


def test_latest_changes_newest_first_and_a_stream_after_them(client: httpx.Client, base_url: str) -> None:
    before = thing("Before the stream")
    assert client.put(f"/things/{before['id']}", json=before).status_code == 201
    items = client.get("/api/v1/changes", params={"limit": 5}).json()["items"]
    assert items[0]["id"] == before["id"]
    assert items[0]["type"] == "thing_created"
    assert [item["seq"] for item in items] == sorted((item["seq"] for item in items), reverse=True)
    newest = items[0]["seq"]
    after = thing("After the stream's start")
    assert client.put(f"/things/{after['id']}", json=after).status_code == 201
    with (
        httpx.Client(base_url=base_url, timeout=10) as stream_client,
        stream_client.stream("GET", "/events", params={"lastEventId": newest - 1}) as stream,
    ):
        ids = []
        for line in stream.iter_lines():
            if line.startswith("data:"):
                ids.append(json.loads(line.removeprefix("data:"))["id"])
            if after["id"] in ids:
                break
    assert ids[:1] == [before["id"]]  # the change right after lastEventId comes first, replayed
    assert after["id"] in ids


def test_listing_by_expiry_soonest_first(client: httpx.Client) -> None:
    later, sooner = thing("Later"), thing("Sooner")
    assert client.put(f"/things/{later['id']}", json={**later, "registration": {"ttl": 3000}}).status_code == 201
    assert client.put(f"/things/{sooner['id']}", json={**sooner, "registration": {"ttl": 2000}}).status_code == 201
    seen: list[dict[str, Any]] = []
    params = {"sort": "expires", "limit": "50"}
    while True:
        page = client.get("/api/v1/search", params=params).json()
        seen.extend(page["items"])
        if not page["next_cursor"]:
            break
        params["cursor"] = page["next_cursor"]
    assert all(item["expires"] for item in seen)
    assert [item["expires"] for item in seen] == sorted(item["expires"] for item in seen)
    ids = [item["id"] for item in seen]
    assert ids.index(sooner["id"]) < ids.index(later["id"])
