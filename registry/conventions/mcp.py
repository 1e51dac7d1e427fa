"""MCP ``server.json`` entries as ``lmos:Tool`` Thing Descriptions (the MCP Registry API, spec 2025-12-01).

A ``server.json`` is validated against the official ``server.schema.json`` (bundled) and stored as one
description per server name: the reverse-DNS namespace of ``name`` is the vendor, ``remotes`` become forms with
their transport, ``packages``, ``repository``, ``websiteUrl`` and ``icons`` become links, the server is one LMOS
capability (its name), and the entry itself is kept verbatim under ``mcp:server`` (the MCP API serves it back
exactly). Each published version is a kept version of that description, compared with the one before it; the
registry's lifecycle status of each version lives under ``mcp:status``.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any
from urllib.parse import quote

import jsonschema_rs

from registry.descriptions.model import LMOS_NAMESPACE, MCP_NAMESPACE, MCP_SERVER_TYPE, TD11_CONTEXT
from registry.descriptions.validation import SEMVER, FieldError, field_path
from registry.descriptions.versions import version_problem

SERVER_TYPE = MCP_SERVER_TYPE
SERVER_MEMBER = "mcp:server"
STATUS_MEMBER = "mcp:status"
TRANSPORT = "mcp:transport"
CONTEXT: list[Any] = [TD11_CONTEXT, {"lmos": LMOS_NAMESPACE, "mcp": MCP_NAMESPACE}]
#: The root operation of an MCP endpoint: clients list the server's tools there (tools/list) before calling one.
ENDPOINT_OP = "queryallactions"
STATUSES = ("active", "deprecated", "deleted")
#: Where packages of each registry type are browsed, for the links of a server's packages.
_PACKAGE_PAGES = {
    "npm": "https://www.npmjs.com/package/{}",
    "pypi": "https://pypi.org/project/{}/",
    "nuget": "https://www.nuget.org/packages/{}",
    "cargo": "https://crates.io/crates/{}",
}


class ServerError(ValueError):
    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__("; ".join(f"{error.field}: {error.description}" for error in errors))
        self.errors = errors


@functools.cache
def _validator() -> jsonschema_rs.Draft7Validator:
    text = resources.files("registry.conventions").joinpath("schemas", "mcp-server.schema.json").read_text("utf-8")
    return jsonschema_rs.Draft7Validator(json.loads(text), validate_formats=True)


def validate_server(server: Any) -> None:
    """:class:`ServerError` naming every way ``server`` breaks the official ``server.schema.json``, or names a
    version the API could not address once published."""
    errors = [FieldError(field_path(error.instance_path), error.message) for error in _validator().iter_errors(server)]
    version = server.get("version") if isinstance(server, dict) else None
    problem = version_problem(version) if isinstance(version, str) else None
    if problem is not None:
        errors.append(FieldError("version", f"the server's version is out of bounds: {problem}"))
    errors.extend(_version_errors(server))
    if errors:
        raise ServerError(errors)


def _version_errors(server: Any) -> list[FieldError]:
    """A version is read back at ``/servers/{name}/versions/{version}``: it must be a non-empty path segment
    other than ``latest``, which names the latest version there."""
    version = server.get("version") if isinstance(server, dict) else None
    if not isinstance(version, str):
        return []
    if not version.strip():
        return [FieldError("version", "must not be empty")]
    if version.strip() != version or "/" in version:
        return [FieldError("version", "must not contain '/' or begin or end with white space")]
    if version == "latest":
        return [FieldError("version", "'latest' is reserved: it names the latest version when reading")]
    return []


def server_id(name: str) -> str:
    """The description id of a server name (one description per name; its versions are kept versions)."""
    return "urn:mcp:server:" + name


def namespace_of(name: str) -> str:
    """``io.github.user`` of ``io.github.user/weather``: the part publishers must own."""
    return name.split("/", 1)[0]


def server_to_description(
    server: dict[str, Any], statuses: dict[str, Any] | None = None, *, extra_types: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The ``lmos:Tool`` TD of a (validated) ``server.json``; ``statuses``: the lifecycle of each version."""
    name, version = server["name"], server["version"]
    document: dict[str, Any] = {
        "@context": CONTEXT,
        "@type": ["lmos:Tool", SERVER_TYPE, *extra_types],
        "id": server_id(name),
        "title": server.get("title") or name,
        "description": server["description"],
    }
    if SEMVER.match(version):
        document["version"] = {"instance": version}
    else:
        # Non-SemVer versions are allowed by MCP; LMOS keeps them as lmos:version (not resolvable by range).
        document["lmos:version"] = version
    # The server is one capability: found by its full name (id) or its short name, as agents' skills are.
    capability = {"lmos:id": name, "lmos:name": name.split("/", 1)[1], "lmos:description": server["description"]}
    document["lmos:metadata"] = {"lmos:vendor": {"lmos:name": namespace_of(name)}, "lmos:capabilities": [capability]}
    forms = [
        {"href": remote["url"], "op": ENDPOINT_OP, TRANSPORT: remote["type"]}
        for remote in server.get("remotes", [])
        if isinstance(remote, dict) and isinstance(remote.get("url"), str)
    ]
    if forms:
        document["forms"] = forms
    links = _links(server)
    if links:
        document["links"] = links
    document["securityDefinitions"] = {"nosec_sc": {"scheme": "nosec"}}
    document["security"] = ["nosec_sc"]
    document[SERVER_MEMBER] = server
    if statuses:
        document[STATUS_MEMBER] = statuses
    return document


def _links(server: dict[str, Any]) -> list[dict[str, Any]]:
    """The server's repository, website, packages and icons, in that order."""
    return [*_site_links(server), *_package_links(server), *_icon_links(server)]


def _site_links(server: dict[str, Any]) -> list[dict[str, Any]]:
    links: list[dict[str, Any]] = []
    repository = server.get("repository")
    if isinstance(repository, dict) and isinstance(repository.get("url"), str):
        links.append({"href": repository["url"], "rel": "mcp:repository"})
    if isinstance(server.get("websiteUrl"), str):
        links.append({"href": server["websiteUrl"], "rel": "service-doc"})
    return links


def _package_links(server: dict[str, Any]) -> list[dict[str, Any]]:
    links: list[dict[str, Any]] = []
    for package in server.get("packages", []):
        href = _package_href(package) if isinstance(package, dict) else None
        if href is not None:
            links.append({"href": href, "rel": "mcp:package", "type": f"application/x-{package['registryType']}"})
    return links


def _icon_links(server: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        _icon_link(icon)
        for icon in server.get("icons", [])
        if isinstance(icon, dict) and isinstance(icon.get("src"), str)
    ]


def _icon_link(icon: dict[str, Any]) -> dict[str, Any]:
    link: dict[str, Any] = {"href": icon["src"], "rel": "icon"}
    if isinstance(icon.get("mimeType"), str):
        link["type"] = icon["mimeType"]
    if isinstance(icon.get("sizes"), list):
        link["sizes"] = " ".join(str(size) for size in icon["sizes"])
    return link


def _package_href(package: dict[str, Any]) -> str | None:
    identifier = package.get("identifier")
    if not isinstance(identifier, str):
        return None
    if identifier.startswith(("https://", "http://")):
        return identifier
    page = _PACKAGE_PAGES.get(str(package.get("registryType")))
    if page is not None:
        return page.format(quote(identifier, safe="@/"))
    base = package.get("registryBaseUrl")
    return f"{base.rstrip('/')}/{quote(identifier, safe='@/:')}" if isinstance(base, str) else None


def server_of(document: dict[str, Any]) -> dict[str, Any] | None:
    """The ``server.json`` a description was published from, if it was."""
    server = document.get(SERVER_MEMBER)
    return server if isinstance(server, dict) else None


def statuses_of(document: dict[str, Any]) -> dict[str, Any]:
    statuses = document.get(STATUS_MEMBER)
    return statuses if isinstance(statuses, dict) else {}


__all__ = [
    "CONTEXT",
    "MCP_NAMESPACE",
    "SERVER_TYPE",
    "STATUSES",
    "ServerError",
    "namespace_of",
    "server_id",
    "server_of",
    "server_to_description",
    "statuses_of",
    "validate_server",
]
