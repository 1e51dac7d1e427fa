"""The directory's own Thing Description (WoT Discovery §6.1 well-known introduction, §7.2 exploration)."""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import urljoin

import httpx
import jsonschema_rs

from tests.conformance.conftest import media_type
from tests.conftest import DATA
from tests.support.servers import ServerProcess

SCHEMA = DATA / "schemas" / "td-json-schema-validation.json"


def hrefs(td: dict[str, object]) -> dict[str, str]:
    """Absolute form targets by affordance name, resolved against ``base``."""
    found = {}
    for kind in ("properties", "actions", "events"):
        for name, affordance in td.get(kind, {}).items():  # type: ignore[attr-defined]
            for form in affordance["forms"]:
                found[name] = urljoin(str(td["base"]), form["href"])
    return found


def test_introduction_well_known_path(client: httpx.Client) -> None:
    assert client.get("/.well-known/wot").status_code == 200


def test_introduction_well_known_thing_description(client: httpx.Client) -> None:
    td = client.get("/.well-known/wot").json()
    assert td["title"]
    assert td["security"]
    assert td["securityDefinitions"]
    assert "https://www.w3.org/2022/wot/td/v1.1" in td["@context"]


def test_introduction_well_known_thing_description__valid_td11(client: httpx.Client) -> None:
    validator = jsonschema_rs.Draft7Validator(json.loads(SCHEMA.read_text()), validate_formats=False)
    td = client.get("/.well-known/wot").json()
    assert [error.message for error in validator.iter_errors(td)] == []


def test_exploration_directory_description_type(client: httpx.Client) -> None:
    td = client.get("/.well-known/wot").json()
    types = td["@type"] if isinstance(td["@type"], list) else [td["@type"]]
    assert "ThingDirectory" in types
    assert "https://www.w3.org/2022/wot/discovery" in td["@context"]
    assert "tm:ThingModel" not in types
    assert "tm:optional" not in td


def test_exploration_directory_description_type__forms_reach_this_server(server: ServerProcess) -> None:
    td = httpx.get(server.base_url + "/.well-known/wot").json()
    targets = hrefs(td)
    assert {"things", "retrieveThing", "createThing", "createAnonymousThing"} <= set(targets)
    assert all(url.startswith(server.base_url + "/") for url in targets.values())
    assert httpx.get(targets["things"].split("{", 1)[0]).status_code == 200  # a URI template


def test_exploration_directory_description_type__public_url(
    isolated_server: Callable[[dict[str, str]], ServerProcess],
) -> None:
    server = isolated_server({"REGISTRY_PUBLIC_URL": "https://registry.example.com/tdd/"})
    td = httpx.get(server.base_url + "/.well-known/wot").json()
    assert td["base"] == "https://registry.example.com/tdd/"
    assert hrefs(td)["things"].startswith("https://registry.example.com/tdd/things")


def test_exploration_server_http_method(client: httpx.Client) -> None:
    assert client.get("/.well-known/wot").status_code == 200


def test_exploration_server_http_resp(client: httpx.Client) -> None:
    response = client.get("/.well-known/wot")
    assert response.status_code == 200
    assert isinstance(response.json(), dict)


def test_exploration_server_http_resp_content_type(client: httpx.Client) -> None:
    assert media_type(client.get("/.well-known/wot")) == "application/td+json"


def test_exploration_server_http_resp_json(client: httpx.Client) -> None:
    td = client.get("/.well-known/wot").json()
    assert isinstance(td["@context"], list | str)


def test_exploration_server_http_head(client: httpx.Client) -> None:
    get = client.get("/.well-known/wot")
    head = client.head("/.well-known/wot")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]
    assert head.headers.get("content-length") in (None, get.headers.get("content-length"))
