"""The API docs page works offline: every file it loads is served by the directory itself."""

from __future__ import annotations

import json
import re
import tempfile
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from tests.support.browser import BROWSER, CHROMIUM_FLAGS, DRIVER, LOOPBACK_ONLY, MISSING


def test_every_file_the_api_docs_load_comes_from_the_server_itself(client: httpx.Client) -> None:
    page = client.get("/schema/swagger")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    references = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", page.text)
    assert references, "the page loads Swagger UI's script and stylesheet"
    origin = urlsplit(str(client.base_url))
    for reference in references:
        url = urlsplit(urljoin(str(page.url), reference))
        assert (url.scheme, url.netloc) == (origin.scheme, origin.netloc), f"{reference} is on another host"
        asset = client.get(url.path)
        assert asset.status_code == 200, reference
        assert asset.content
    assert any(reference.endswith("swagger-ui-bundle.js") for reference in references)
    bundle = client.get(next(ref for ref in references if ref.endswith("swagger-ui-bundle.js")))
    assert bundle.headers["content-type"].startswith("text/javascript")
    # Swagger UI 5 reads the OpenAPI 3.1 document this server publishes (Swagger UI 4 renders 3.1 as an error).
    assert client.get("/schema/openapi.json").json()["openapi"].startswith("3.1")
    assert re.search(rb'PACKAGE_VERSION:"5\.', bundle.content)


def test_the_api_docs_serve_no_other_file(client: httpx.Client) -> None:
    response = client.get("/schema/swagger-ui/swagger-editor-bundle.js")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")


@pytest.mark.skipif(BROWSER is None or DRIVER is None, reason=MISSING)
def test_the_api_docs_render_in_a_browser_that_reaches_only_this_server(base_url: str) -> None:
    """Headless Chromium that resolves no host name and reaches loopback only renders every operation."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = BROWSER
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    with tempfile.TemporaryDirectory(prefix="api-docs-chromium-") as profile:
        for flag in (*CHROMIUM_FLAGS, LOOPBACK_ONLY, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(DRIVER), options=options)
        try:
            driver.get(base_url + "/schema/swagger")
            operations = WebDriverWait(driver, 15).until(
                lambda _: driver.find_elements(By.CSS_SELECTOR, ".opblock") or None
            )
            title = driver.find_element(By.CSS_SELECTOR, ".info .title").text
            requested = {
                message["params"]["request"]["url"]
                for entry in driver.get_log("performance")
                if (message := json.loads(entry["message"])["message"])["method"] == "Network.requestWillBeSent"
            }
        finally:
            driver.quit()
    documented = client_operations(base_url)
    assert len(operations) == documented
    assert title.startswith("LMOS Agent and Tool Registry")
    fetched = {url for url in requested if url.startswith(("http:", "https:", "ws:", "wss:"))}  # not chrome://
    assert fetched
    assert all(url.startswith(base_url + "/") for url in fetched), fetched


def client_operations(base_url: str) -> int:
    paths = httpx.get(base_url + "/schema/openapi.json").json()["paths"]
    return sum(1 for item in paths.values() for method in item if method in HTTP_METHODS)


HTTP_METHODS = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}
