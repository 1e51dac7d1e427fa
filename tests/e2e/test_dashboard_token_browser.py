"""The dashboard against a directory whose reads need credentials (REGISTRY_AUTH=all), in headless Chromium: it
asks for a token once, keeps it in the page's memory only, and reads and follows the event stream with it.

Skipped, with the reason, where no Chromium or ChromeDriver is installed (as tests/e2e/test_dashboard_browser.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions

from tests.support.browser import BROWSER, DRIVER, MISSING, chromium, wait_for
from tests.support.keys import create_key
from tests.support.servers import ServerProcess, fresh_database
from tests.support.things import thing

pytestmark = pytest.mark.skipif(BROWSER is None or DRIVER is None, reason=MISSING)
WAIT = 15.0


@pytest.fixture(scope="module")
def protected(postgres_admin_url: str) -> Iterator[tuple[ServerProcess, str, str]]:
    with fresh_database(postgres_admin_url) as url:
        secret = create_key(url, "ops", "--scopes", "write")
        with ServerProcess(url, {"REGISTRY_AUTH": "all"}) as server:
            document = thing("Guarded Agent")
            with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {secret}"}) as client:
                assert client.put(f"/things/{document['id']}", json=document).status_code == 201
            yield server, secret, document["id"]


def test_the_dashboard_asks_for_a_token_and_keeps_it_in_memory_only(
    protected: tuple[ServerProcess, str, str],
) -> None:
    server, secret, thing_id = protected
    with chromium(server.base_url + "/dashboard") as driver:
        prompt = wait_for(driver, lambda: expected_conditions.alert_is_present()(driver), "a token prompt", WAIT)
        assert "API key or access token" in prompt.text
        prompt.send_keys(secret)
        prompt.accept()
        unread = "the page did not read the directory and follow its events with the token"
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, f'#rows tr[data-id="{thing_id}"]'), unread, WAIT)
        wait_for(driver, lambda: driver.find_element(By.ID, "feed-status").text == "live", unread, WAIT)
        # Still one prompt only, and nothing stored by the page.
        assert not expected_conditions.alert_is_present()(driver)
        stored = driver.execute_script("return [localStorage.length, sessionStorage.length, document.cookie.length]")
        assert stored == [0, 0, 0]
        # A change made now reaches the page through the event stream that carries the token ...
        other = thing(f"Later {uuid.uuid4().hex[:6]}")
        with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {secret}"}) as client:
            assert client.put(f"/things/{other['id']}", json=other).status_code == 201
        unseen = "the change did not reach the page's activity feed"
        wait_for(driver, lambda: other["id"] in driver.find_element(By.ID, "events").text, unseen, WAIT)
        # ... naming who made it.
        wait_for(driver, lambda: "by key:ops" in driver.find_element(By.ID, "events").text, unseen, WAIT)
