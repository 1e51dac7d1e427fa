"""The ops dashboard over HTTP: its files, their media types and security headers, and the API shapes it reads.

The page itself is exercised in a real browser by test_dashboard_browser.py.
"""

from __future__ import annotations

import re
from importlib import resources

import httpx
import pytest

CSP = "Content-Security-Policy"
FILES = [
    ("/dashboard", "text/html"),
    ("/dashboard/dashboard.js", "text/javascript"),
    ("/dashboard/dashboard.css", "text/css"),
    ("/dashboard/favicon.svg", "image/svg+xml"),
]


@pytest.mark.parametrize(("path", "media_type"), FILES)
def test_files_are_served_with_their_type_and_security_headers(
    client: httpx.Client, path: str, media_type: str
) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == media_type
    assert "default-src 'self'" in response.headers[CSP]
    assert "frame-ancestors 'none'" in response.headers[CSP]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.content


def test_page_loads_its_module_and_stylesheet_and_has_no_inline_script(client: httpx.Client) -> None:
    page = client.get("/dashboard").text
    assert '<script type="module" src="/dashboard/dashboard.js"></script>' in page
    assert 'href="/dashboard/dashboard.css"' in page
    # The CSP forbids inline scripts and handlers, so there must be none to forbid.
    assert all(re.search(r'\bsrc="', tag) for tag in re.findall(r"<script[^>]*>", page))
    assert not re.search(r"\son[a-z]+=", page)
    for link in ('href="/.well-known/wot"', 'href="/schema/swagger"'):
        assert link in page


def test_the_module_never_parses_data_as_markup() -> None:
    """Descriptions are untrusted: text reaches the page through textContent and text nodes only."""
    module = resources.files("registry.http").joinpath("dashboard", "dashboard.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in module, sink


def test_head_and_trailing_slash(client: httpx.Client) -> None:
    head = client.head("/dashboard/dashboard.js")
    assert head.status_code == 200
    assert head.headers["content-type"].startswith("text/javascript")
    assert head.content == b""
    assert client.get("/dashboard/").status_code == 200


@pytest.mark.parametrize("path", ["/dashboard/nothing.js", "/dashboard/index.htm", "/dashboard/..%2Fapp.py"])
def test_other_paths_are_problem_404(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["status"] == 404


def test_the_apis_the_dashboard_reads_have_the_fields_it_uses(client: httpx.Client) -> None:
    """A contract check: dashboard.js reads these members; renaming one would blank part of the page."""
    facets = client.get("/api/v1/facets").json()
    assert set(facets) >= {"kind", "vendor", "capability"}
    collection = client.get("/things", params={"limit": 1, "format": "collection"}).json()
    assert isinstance(collection["total"], int)
    stats = client.get("/search/stats").json()
    assert "indexReady" in stats
    assert {"descriptionsWithUnknownContexts", "unknownContexts"} <= set(stats)
    if stats["indexReady"]:
        assert {"indexPosition", "indexedDescriptions"} <= set(stats)
    page = client.get("/api/v1/search", params={"limit": 1}).json()
    assert set(page) >= {"items", "next_cursor"}
