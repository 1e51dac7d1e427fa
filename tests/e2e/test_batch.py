"""``POST /api/v1/things/batch``: many descriptions in one request and one transaction, each checked as a PUT of it
would be, each outcome in its place."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from registry.wire import MAX_BATCH
from tests.e2e.test_cli import registry
from tests.support.things import thing


def test_each_description_is_written_or_refused_in_its_place(client: httpx.Client) -> None:
    word = f"batchword{id(client)}"
    first, second = thing(f"Batch {word} one"), thing(f"Batch {word} two", registration={"ttl": 600})
    invalid = {**thing("Invalid"), "title": 5}
    anonymous = {key: value for key, value in thing("No id").items() if key != "id"}

    answer = client.post("/api/v1/things/batch", json=[first, invalid, second, anonymous])

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["written"], body["refused"]) == (2, 2)
    assert [item["status"] for item in body["results"]] == [201, 400, 201, 400]
    assert [item.get("id") for item in body["results"]] == [first["id"], invalid["id"], second["id"], None]
    assert body["results"][1]["problem"]["validationErrors"]
    assert "needs its id" in body["results"][3]["problem"]["detail"]
    stored = client.get(f"/things/{second['id']}")
    assert stored.status_code == 200
    assert stored.headers["etag"] == body["results"][2]["etag"]
    assert stored.json()["registration"]["ttl"] == 600
    assert client.get(f"/things/{invalid['id']}").status_code == 404
    # The projections ran in the batch's transaction: search finds both.
    found = client.get("/api/v1/search", params={"q": word}).json()
    assert {item["id"] for item in found["items"]} == {first["id"], second["id"]}

    assert client.get(f"/things/{first['id']}").json()["title"] == f"Batch {word} one"  # now in the response cache
    replaced = client.post("/api/v1/things/batch", json=[{**first, "title": "Replaced"}])
    assert [item["status"] for item in replaced.json()["results"]] == [200]
    assert client.get(f"/things/{first['id']}").json()["title"] == "Replaced"


def test_what_is_not_a_batch_is_refused(client: httpx.Client) -> None:
    not_a_list = client.post("/api/v1/things/batch", json=thing("Alone"))
    assert not_a_list.status_code == 400
    assert not_a_list.headers["content-type"].startswith("application/problem+json")
    assert "JSON array" in not_a_list.json()["detail"]

    too_many = client.post("/api/v1/things/batch", json=[{"id": f"urn:test:many:{n}"} for n in range(MAX_BATCH + 1)])
    assert too_many.status_code == 400
    assert f"at most {MAX_BATCH}" in too_many.json()["detail"]


def test_import_sends_batches_and_reports_each_file(base_url: str, tmp_path: Path) -> None:
    documents = [thing(f"Batched {index}") for index in range(7)]
    documents[4]["title"] = 7
    for index, document in enumerate(documents):
        (tmp_path / f"{index}.td.json").write_text(json.dumps(document))

    result = registry(base_url, "import", str(tmp_path), "--batch-size", "3", "--json")

    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert [item["file"] for item in summary["registered"]] == [f"{index}.td.json" for index in (0, 1, 2, 3, 5, 6)]
    assert all(item["created"] for item in summary["registered"])
    [failure] = summary["failed"]
    assert (failure["file"], failure["status"]) == ("4.td.json", 400)
    assert failure["validationErrors"]

    repeated = registry(base_url, "import", str(tmp_path), "--batch-size", "3", "--json")
    assert repeated.stdout, (repeated.returncode, repeated.stderr)
    again = json.loads(repeated.stdout)
    assert not any(item["created"] for item in again["registered"])


def test_an_id_given_twice_in_one_batch_is_refused_in_its_second_place(client: httpx.Client) -> None:
    first = thing("Given first")
    answer = client.post("/api/v1/things/batch", json=[first, {**first, "title": "Given again"}])

    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [item["status"] for item in results] == [201, 400]
    problem = results[1]["problem"]
    assert "appears more than once in this batch" in problem["detail"]
    assert problem["validationErrors"] == [{"field": "id", "description": "already given earlier in this batch"}]
    assert client.get(f"/things/{first['id']}").json()["title"] == "Given first"
