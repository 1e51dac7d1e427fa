"""``enrich_json`` (the fast path of GET) serves exactly what ``enrich`` + encode would."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from registry.descriptions.registration_info import enrich, enrich_json
from tests.conftest import REAL_TDS

DOCUMENTS = sorted(REAL_TDS.glob("*.json")) + sorted((Path(__file__).resolve().parents[1] / "fixtures").glob("*.json"))
NOW = dt.datetime(2026, 11, 21, 12, 0, 0, 123456, tzinfo=dt.UTC)
LIFETIMES: list[dict[str, Any]] = [
    {"expires": None, "ttl": None},
    {"expires": NOW + dt.timedelta(seconds=90), "ttl": 90.0},
    {"expires": NOW + dt.timedelta(seconds=1.5), "ttl": 1.5},
    {"expires": NOW + dt.timedelta(days=2), "ttl": None},
]
SPECIAL: list[dict[str, Any]] = [
    {"title": "no context"},
    {"@context": "https://www.w3.org/2022/wot/discovery", "title": "only discovery"},
    {"title": "context last", "@context": ["https://www.w3.org/2022/wot/td/v1.1", {"x": "https://x/ü"}]},
    {"@context": "https://www.w3.org/2022/wot/td/v1.1", "title": "ünïcödé ✓ 𝄞", "n": 1.0e300, "e": {}},
]


@pytest.mark.parametrize("lifetime", LIFETIMES)
@pytest.mark.parametrize(
    "document",
    [json.loads(path.read_text(encoding="utf-8")) for path in DOCUMENTS] + SPECIAL,
    ids=[path.name for path in DOCUMENTS] + [f"special-{index}" for index in range(len(SPECIAL))],
)
def test_enrich_json_equals_enrich(document: dict[str, Any], lifetime: dict[str, Any]) -> None:
    times = {"created": NOW - dt.timedelta(hours=1), "modified": NOW, "retrieved": NOW, **lifetime}
    stored_text = msgspec.json.encode(document).decode()
    assert enrich_json(stored_text, **times) == msgspec.json.encode(enrich(document, **times))
