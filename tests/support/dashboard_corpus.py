"""A small corpus for the dashboard tests and its screenshot (docs/dashboard.png).

Agents, tools and a plain thing of three vendors; one agent in three versions (compatible, then breaking); one
tool whose title, description and vendor are markup, which the page must show as text; and a thing whose id
holds ``/``, ``?`` and ``#``, which the page must percent-encode in paths.
Seed a running registry with ``python -m tests.support.dashboard_corpus http://127.0.0.1:8000``.
"""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import quote

import httpx

TD11 = "https://www.w3.org/2022/wot/td/v1.1"
HOSTILE_TITLE = "<img src=x onerror=alert(1)>"
HOSTILE_DESCRIPTION = "<script>document.title='owned'</script>"
WEATHER_ID = "urn:dashboard:agent:weather"
HOSTILE_ID = "urn:dashboard:tool:hostile"
#: An id with the characters a path mangles unless the page percent-encodes it.
THERMOSTAT_ID = "https://devices.example/office/thermostat?floor=2#main"


def _action(description: str, inputs: dict[str, str], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "description": description,
        "input": {
            "type": "object",
            "properties": {name: {"type": kind} for name, kind in inputs.items()},
            "required": required or [],
        },
        "forms": [{"href": "https://agents.example/invoke", "op": "invokeaction"}],
    }


def _description(
    kind: str | None,
    name: str,
    title: str,
    vendor: str | None,
    *,
    version: str | None = None,
    description: str | None = None,
    capabilities: list[dict[str, Any]] | None = None,
    actions: dict[str, Any] | None = None,
    ttl: int | None = None,
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "@context": [TD11, {"lmos": "https://eclipse.dev/lmos/protocol/v1"}],
        "id": name,
        "title": title,
        "securityDefinitions": {"nosec_sc": {"scheme": "nosec"}},
        "security": "nosec_sc",
    }
    if kind:
        document["@type"] = kind
    if vendor:
        slug = vendor.split()[0].lower()
        document["lmos:metadata"] = {"lmos:vendor": {"lmos:name": vendor, "lmos:url": f"https://{slug}.example"}}
    if version:
        document["version"] = {"instance": version}
    if description:
        document["description"] = description
    if capabilities:
        document["lmos:capabilities"] = capabilities
    if actions:
        document["actions"] = actions
    if ttl:
        document["registration"] = {"ttl": ttl}
    return document


def _weather(version: str, inputs: dict[str, str], required: list[str]) -> dict[str, Any]:
    return _description(
        "lmos:Agent",
        WEATHER_ID,
        "Weather Agent",
        "Deutsche Telekom AG",
        version=version,
        description="Answers questions about the weather anywhere in the world.",
        capabilities=[{"id": "urn:lmos:capability:weather", "name": "weather-forecast", "version": version}],
        actions={"getWeather": _action("Fetches weather information based on user input.", inputs, required)},
    )


def corpus() -> list[dict[str, Any]]:
    """Descriptions in registration order (the weather agent three times: 1.0.0, 1.1.0, 2.0.0)."""
    return [
        _weather("1.0.0", {"question": "string"}, ["question"]),
        _weather("1.1.0", {"question": "string", "units": "string"}, ["question"]),
        _weather("2.0.0", {"question": "string", "location": "string"}, ["question", "location"]),
        _description(
            "lmos:Agent",
            "urn:dashboard:agent:billing",
            "Billing Agent",
            "Deutsche Telekom AG",
            version="1.2.0",
            description="Shows and explains invoices.",
            capabilities=[{"id": "urn:lmos:capability:billing", "name": "billing", "version": "1.2.0"}],
            ttl=3600,
        ),
        _description(
            "lmos:Agent",
            "urn:dashboard:agent:travel",
            "Travel Planner",
            "Acme Corp",
            version="0.9.0",
            description="Plans trips: flights, hotels and trains.",
            capabilities=[
                {"name": "flight-search", "version": "0.9.0"},
                {"name": "hotel-booking", "version": "0.4.0"},
                {"id": "urn:lmos:capability:weather", "name": "weather-forecast", "version": "1.0.0"},
            ],
        ),
        _description(
            "lmos:Agent",
            "urn:dashboard:agent:support",
            "Customer Support Agent",
            "Globex",
            version="3.1.4",
            description="First-line support for contracts and devices.",
            capabilities=[{"id": "urn:lmos:capability:billing", "name": "billing", "version": "1.0.0"}],
            ttl=86400,
        ),
        _description(
            "lmos:Tool",
            "urn:dashboard:tool:currency",
            "Currency Converter",
            "Acme Corp",
            version="2.0.1",
            description="Converts amounts between currencies at today's rate.",
            actions={"convert": _action("Convert an amount", {"amount": "number", "from": "string", "to": "string"})},
        ),
        _description(
            "lmos:Tool",
            "urn:dashboard:tool:geocoder",
            "Geocoder",
            "Deutsche Telekom AG",
            version="1.0.0",
            description="Turns addresses into coordinates.",
            actions={"geocode": _action("Geocode an address", {"address": "string"}, ["address"])},
        ),
        _description(
            "lmos:Tool",
            HOSTILE_ID,
            HOSTILE_TITLE,
            "Evil <b>Corp</b>",
            version="0.0.1",
            description=HOSTILE_DESCRIPTION,
            actions={"steal": _action("<img src=y onerror=alert(2)>", {"what": "string"})},
        ),
        _description(None, THERMOSTAT_ID, "Office Thermostat", None),
    ]


def register(client: httpx.Client) -> None:
    for document in corpus():
        response = client.put(
            f"/things/{quote(document['id'], safe='')}", json=document, headers={"content-type": "application/td+json"}
        )
        response.raise_for_status()


if __name__ == "__main__":
    with httpx.Client(base_url=sys.argv[1], timeout=30) as http:
        register(http)
