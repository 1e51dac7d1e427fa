"""Every write leaves exactly one change-log row whose seq is the new ETag (what events and replicas read)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import httpx

TD_JSON = {"content-type": "application/td+json"}
MERGE_PATCH = {"content-type": "application/merge-patch+json"}


def change_rows(database_url: str, thing_id: str) -> list[dict[str, Any]]:
    async def query() -> list[dict[str, Any]]:
        connection = await asyncpg.connect(database_url)
        try:
            rows = await connection.fetch(
                "SELECT seq, type, diff::text AS diff FROM changes WHERE thing_id = $1 ORDER BY seq", thing_id
            )
            return [dict(row) for row in rows]
        finally:
            await connection.close()

    return asyncio.run(query())


def test_change_log_rows(client: httpx.Client, database_url: str) -> None:
    import json

    thing_id = f"urn:uuid:{uuid.uuid4()}"
    td = {
        "@context": "https://www.w3.org/2022/wot/td/v1.1",
        "id": thing_id,
        "title": "logged",
        "description": "to be removed",
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
        "registration": {"ttl": 600},
    }
    created = client.put(f"/things/{thing_id}", json=td, headers=TD_JSON)
    patched = client.patch(f"/things/{thing_id}", json={"title": "relogged", "description": None}, headers=MERGE_PATCH)
    renewed = client.patch(f"/things/{thing_id}", json={}, headers=MERGE_PATCH)
    assert client.delete(f"/things/{thing_id}").status_code == 204

    rows = change_rows(database_url, thing_id)
    assert [row["type"] for row in rows] == ["thing_created", "thing_updated", "thing_updated", "thing_deleted"]
    assert [f'"{row["seq"]}"' for row in rows[:3]] == [
        created.headers["etag"],
        patched.headers["etag"],
        renewed.headers["etag"],
    ]
    stored = {key: value for key, value in td.items() if key != "registration"}
    assert json.loads(rows[0]["diff"]) == stored
    assert json.loads(rows[1]["diff"]) == {"id": thing_id, "title": "relogged", "description": None}
    assert json.loads(rows[2]["diff"]) == {"id": thing_id}
    assert rows[3]["diff"] is None
