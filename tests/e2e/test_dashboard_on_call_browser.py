"""The dashboard for the one on call, in headless Chromium against a server with its own database and
``REGISTRY_AUTH=writes``: a pasted id opens its description, the URL holds the view (search, filters, the open
description) and opens it again elsewhere, details name owner, tenant, last lease renewal and who changed what, a
lapsed lease and a delete look different, a "breaking" verdict opens the diff, counts are true beyond the quality
page, the traffic card leaves out the page's own health polls and counts 401/403/429 apart from 5xx, an admin
manages keys (the secret shown once) and no one else sees them; usable at 390 px as at 1440 px.

Screenshots go to ``$REGISTRY_TEST_ARTIFACTS`` (default ``test-artifacts/``). Skipped, with the reason, where no
Chromium or ChromeDriver is installed (Debian: ``apt-get install chromium chromium-driver``).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions

from tests.support import browser as chromium
from tests.support.browser import BROWSER, DRIVER, MISSING
from tests.support.dashboard_corpus import HOSTILE_TITLE, WEATHER_ID, register
from tests.support.keys import create_key
from tests.support.servers import REPO_ROOT, ServerProcess, fresh_database
from tests.support.things import thing, versioned_tool

pytestmark = pytest.mark.skipif(BROWSER is None or DRIVER is None, reason=MISSING)
ARTIFACTS = Path(os.environ.get("REGISTRY_TEST_ARTIFACTS", REPO_ROOT / "test-artifacts"))
WAIT = 20.0
#: More descriptions with lint warnings than the quality view lists (its page holds 100).
LINTED = 104
#: Run before the page's scripts: record script errors and CSP violations (see test_dashboard_browser.py).
RECORD_PROBLEMS = """
window.problems = [];
document.addEventListener("securitypolicyviolation", (event) =>
  window.problems.push(`CSP ${event.violatedDirective} blocked ${event.blockedURI || "inline code"}`));
window.addEventListener("error", (event) => { if (event.message) window.problems.push(`error ${event.message}`); });
window.addEventListener("unhandledrejection", (event) => window.problems.push(`rejection ${event.reason}`));
"""
WIDE, NARROW = (1440, 900), (390, 844)


class Directory:
    def __init__(self, server: ServerProcess, secrets: dict[str, str]) -> None:
        self.server = server
        self.secrets = secrets

    def client(self, who: str = "writer") -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.secrets[who]}"} if who else {}
        return httpx.Client(base_url=self.server.base_url, headers=headers, timeout=30)


@pytest.fixture(scope="module")
def directory(postgres_admin_url: str) -> Iterator[Directory]:
    with fresh_database(postgres_admin_url) as url:
        secrets = {
            "admin": create_key(url, "on-call", "--scopes", "admin"),
            "writer": create_key(url, "ci-weather", "--scopes", "write"),
            "team": create_key(url, "ci-team", "--scopes", "write", "--tenant", "weather-team"),
            "reader": create_key(url, "dash", "--scopes", "read"),
        }
        env = {"REGISTRY_AUTH": "writes", "REGISTRY_PURGE_INTERVAL": "1", "REGISTRY_EXPIRY_GRACE": "1"}
        with ServerProcess(url, env) as server:
            directory = Directory(server, secrets)
            with directory.client() as client:
                register(client)
                tools = [versioned_tool(f"urn:dashboard:linted:{number:03}", "1.0.0", []) for number in range(LINTED)]
                client.post("/api/v1/things/batch", json=tools).raise_for_status()
            yield directory


@contextlib.contextmanager
def page(directory: Directory, path: str = "/dashboard", size: tuple[int, int] = WIDE) -> Iterator[Any]:
    with chromium.chromium("about:blank", before_scripts=RECORD_PROBLEMS) as driver:
        width, height = size
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
        )
        driver.get(directory.server.base_url + path)
        yield driver
        assert driver.execute_script("return window.problems") == []


def wait_for(driver: Any, condition: Callable[[], Any], message: str, within: float = WAIT) -> Any:
    return chromium.wait_for(driver, condition, message, within, on_timeout=lambda: screenshot(driver, "failure"))


def screenshot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"dashboard-on-call-{name}.png"))


def text(driver: Any, element_id: str) -> str:
    return str(driver.find_element(By.ID, element_id).text)


def facts(driver: Any) -> dict[str, str]:
    return {
        node.get_attribute("data-fact"): node.text for node in driver.find_elements(By.CSS_SELECTOR, "#detail-facts dd")
    }


def query_of(driver: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(driver.current_url).query)


def no_sideways_scrolling(driver: Any) -> bool:
    return bool(driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth"))


def sign_in(driver: Any, secret: str) -> None:
    driver.find_element(By.ID, "sign-in").click()
    prompt = wait_for(driver, lambda: expected_conditions.alert_is_present()(driver), "a token prompt")
    prompt.send_keys(secret)
    prompt.accept()


def search(driver: Any, words: str) -> None:
    field = driver.find_element(By.ID, "q")
    field.clear()
    field.send_keys(words)
    driver.find_element(By.CSS_SELECTOR, '#search button[type="submit"]').click()


def test_a_pasted_id_opens_its_description_with_owner_tenant_lease_and_history(directory: Directory) -> None:
    leased = thing("Leased agent")
    with directory.client("team") as client:
        client.put(f"/things/{leased['id']}", json={**leased, "registration": {"ttl": 3600}}).raise_for_status()
        patch = {"title": "Leased agent, renamed", "description": "Now described"}
        client.patch(
            f"/things/{leased['id']}", json=patch, headers={"Content-Type": "application/merge-patch+json"}
        ).raise_for_status()
        renewed = client.post(f"/api/v1/things/{leased['id']}/lease").json()["lastSeen"]
    with page(directory) as driver:
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#rows tr"), "the table")
        # A tenant's description: the one on call signs in as an admin to see it.
        sign_in(driver, directory.secrets["admin"])
        wait_for(driver, lambda: driver.find_element(By.ID, "keys").is_displayed(), "signed in")
        search(driver, leased["id"])
        wait_for(driver, lambda: driver.find_element(By.ID, "detail").is_displayed(), "the pasted id opens")
        wait_for(driver, lambda: text(driver, "detail-title") == "Leased agent, renamed", "its details")
        wait_for(driver, lambda: facts(driver).get("owner") == "key:ci-team", "the owner")
        shown = facts(driver)
        assert shown["tenant"] == "weather-team"
        assert "lease of 3600 s" in shown["last-renewal"]
        assert driver.find_element(By.ID, "q").get_attribute("value") == ""  # opened, not searched as text
        changes = wait_for(
            driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#detail-changes li.change"), "history"
        )
        assert [change.find_element(By.CLASS_NAME, "verb").text for change in changes] == ["updated", "created"]
        assert "by key:ci-team" in changes[0].text
        assert [code.text for code in changes[0].find_elements(By.CSS_SELECTOR, ".changed code")] == [
            "/description",
            "/title",
        ]
        assert query_of(driver)["open"] == [leased["id"]]
        assert renewed  # the renewal the fact shows (its time, in the reader's locale)
        screenshot(driver, "details-1440")


def test_the_url_holds_search_filters_and_the_open_description(directory: Directory) -> None:
    with page(directory) as driver:
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#rows tr"), "the table")
        search(driver, "weather")
        driver.find_element(By.CSS_SELECTOR, '#kind option[value="agent"]').click()
        wait_for(driver, lambda: query_of(driver).get("kind") == ["agent"], "the filters in the URL")
        wait_for(driver, lambda: chromium.clicked(driver, f'#rows tr[data-id="{WEATHER_ID}"]'), "row")
        wait_for(driver, lambda: query_of(driver).get("open") == [WEATHER_ID], "the open description in the URL")
        shared = driver.current_url
        assert query_of(driver)["q"] == ["weather"]
    # The link, opened in another browser, shows the same view.
    with page(directory, shared.removeprefix(directory.server.base_url)) as driver:
        wait_for(driver, lambda: driver.find_element(By.ID, "detail").is_displayed(), "the shared link opens it")
        wait_for(driver, lambda: WEATHER_ID in text(driver, "detail-facts"), "the same description")
        assert driver.find_element(By.ID, "q").get_attribute("value") == "weather"
        assert driver.find_element(By.ID, "kind").get_attribute("value") == "agent"
        rows = wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#rows tr"), "the filtered table")
        assert {row.get_attribute("data-kind") for row in rows} == {"agent"}
        driver.find_element(By.ID, "detail-close").click()
        wait_for(driver, lambda: "open" not in query_of(driver), "closing forgets it in the URL")


def test_a_breaking_verdict_opens_what_changed(directory: Directory) -> None:
    with page(directory) as driver:
        selector = '#quality-bumps tbody tr[data-verdict="breaking"] .open-diff'
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, selector), "a breaking bump")
        bump = next(
            row for row in driver.find_elements(By.CSS_SELECTOR, "#quality-bumps tbody tr") if WEATHER_ID in row.text
        )
        bump.find_element(By.CSS_SELECTOR, ".open-diff").click()
        wait_for(driver, lambda: driver.find_element(By.ID, "detail-diff-section").is_displayed(), "the diff")
        items = wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#detail-diff li.breaking"), "changes")
        assert items
        assert "breaking" in text(driver, "detail-diff-title")
        screenshot(driver, "breaking-diff")


def test_true_counts_beyond_the_quality_page(directory: Directory) -> None:
    with page(directory) as driver:
        wait_for(driver, lambda: text(driver, "quality-lint-count"), "the lint count")
        total = len(driver.find_elements(By.CSS_SELECTOR, "#quality-lint tbody tr"))
        assert total == 100
        count = text(driver, "quality-lint-count")
        match = re.fullmatch(r"(\d+) \(the 100 most warned shown\)", count)
        assert match, count
        assert int(match[1]) >= LINTED


def test_a_lapsed_lease_and_a_delete_look_different_in_activity(directory: Directory) -> None:
    lapsing, deleted = thing("Lapsing"), thing("Deleted")
    with page(directory) as driver:
        wait_for(driver, lambda: text(driver, "feed-status") == "live", "the live feed")
        with directory.client() as client:
            client.put(f"/things/{lapsing['id']}", json={**lapsing, "registration": {"ttl": 1}}).raise_for_status()
            client.put(f"/things/{deleted['id']}", json=deleted).raise_for_status()
            client.delete(f"/things/{deleted['id']}").raise_for_status()

        def entry(thing_id: str, verb: str) -> Any:
            for item in driver.find_elements(By.CSS_SELECTOR, f"#events li.event-{verb}"):
                if item.get_attribute("data-id") == thing_id:
                    return item
            return None

        expired = wait_for(driver, lambda: entry(lapsing["id"], "expired"), "the purge shown as an expiry")
        gone = wait_for(driver, lambda: entry(deleted["id"], "deleted"), "the delete shown as a delete")
        assert expired.find_element(By.CLASS_NAME, "verb").text == "expired"
        assert "lease ran out" in expired.text
        assert gone.find_element(By.CLASS_NAME, "verb").text == "deleted"
        assert "by key:ci-weather" in gone.text
        assert expired.value_of_css_property("color") != gone.find_element(By.CLASS_NAME, "verb").value_of_css_property(
            "color"
        )
    # Replayed on load, the same.
    with page(directory) as driver:
        wait_for(driver, lambda: entry_replayed(driver, lapsing["id"]) == "expired", "replayed as an expiry")
        assert entry_replayed(driver, deleted["id"]) == "deleted"


def entry_replayed(driver: Any, thing_id: str) -> str | None:
    for item in driver.find_elements(By.CSS_SELECTOR, "#events li.event"):
        if item.get_attribute("data-id") == thing_id and "event-created" not in item.get_attribute("class"):
            return str(item.find_element(By.CLASS_NAME, "verb").text)
    return None


def status_classes(driver: Any) -> dict[str, str]:
    return {
        node.get_attribute("data-status-class"): node.text
        for node in driver.find_elements(By.CSS_SELECTOR, "#stat-errors .status-class")
    }


def test_the_traffic_card_leaves_out_its_own_polls_and_counts_refusals_apart(directory: Directory) -> None:
    with page(directory) as driver:
        card = wait_for(driver, lambda: text(driver, "stat-errors"), "the traffic card")
        assert card == "needs an admin's key: sign in"
        sign_in(driver, directory.secrets["admin"])
        # Left open with no one else calling, the page's own polling (health every 5 s) is no traffic.
        wait_for(driver, lambda: text(driver, "stat-rate") == "0.0/s", "an idle directory at 0.0/s", within=40)
        with directory.client("reader") as reader, directory.client("") as anonymous:
            for _ in range(3):
                assert anonymous.put("/things/urn:x:y", json={}).status_code == 401
                assert reader.put("/things/urn:x:y", json={}).status_code == 403
        counted = '[data-status-class="401"].seen'
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, counted), "401s counted", within=15)
        classes = status_classes(driver)
        assert set(classes) == {"5xx", "401", "403", "429", "other 4xx"}
        assert classes["5xx"].startswith("5xx: 0.00/s")
        assert not classes["403"].startswith("403: 0.00/s")
        assert driver.find_elements(By.CSS_SELECTOR, '[data-status-class="403"].seen')
        screenshot(driver, "traffic")


def test_an_admin_manages_keys_and_sees_a_secret_once(directory: Directory) -> None:
    with page(directory) as driver:
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#rows tr"), "the table")
        assert not driver.find_element(By.ID, "keys").is_displayed()
        sign_in(driver, directory.secrets["admin"])
        wait_for(driver, lambda: driver.find_element(By.ID, "keys").is_displayed(), "the keys view")
        rows = driver.find_elements(By.CSS_SELECTOR, "#keys-rows tr")
        assert {row.find_element(By.CSS_SELECTOR, "td").text.split("\n")[0] for row in rows} >= {"on-call", "dash"}
        name = f"from-dashboard-{uuid.uuid4().hex[:6]}"
        form = driver.find_element(By.ID, "key-form")
        form.find_element(By.NAME, "key-name").send_keys(name)
        form.find_element(By.CSS_SELECTOR, 'select[name="key-scope"] option[value="write"]').click()
        form.find_element(By.NAME, "key-namespaces").send_keys("urn:dash:*")
        form.find_element(By.CSS_SELECTOR, 'button[type="submit"]').click()
        wait_for(driver, lambda: driver.find_element(By.ID, "key-secret-box").is_displayed(), "the secret, once")
        secret = text(driver, "key-secret")
        assert secret.startswith("reg_")
        screenshot(driver, "keys-secret")
        row = wait_for(driver, lambda: key_row(driver, name), "the new key listed")
        assert secret not in driver.find_element(By.ID, "keys-table").text
        # The secret works, within what it was given.
        document = {**thing("From a dashboard key"), "id": f"urn:dash:{uuid.uuid4()}"}
        with httpx.Client(base_url=directory.server.base_url, timeout=30) as client:
            headers = {"Authorization": f"Bearer {secret}"}
            assert client.put(f"/things/{document['id']}", json=document, headers=headers).status_code == 201
        driver.find_element(By.ID, "key-secret-close").click()
        assert text(driver, "key-secret") == ""
        row.find_element(By.CLASS_NAME, "revoke").click()
        wait_for(driver, lambda: expected_conditions.alert_is_present()(driver), "a confirmation").accept()
        wait_for(driver, lambda: key_row(driver, name).get_attribute("data-state") == "revoked", "revoked")
        with httpx.Client(base_url=directory.server.base_url, timeout=30) as client:
            other = thing("After revocation")
            headers = {"Authorization": f"Bearer {secret}"}
            assert client.put(f"/things/{other['id']}", json=other, headers=headers).status_code == 401


def key_row(driver: Any, name: str) -> Any:
    for row in driver.find_elements(By.CSS_SELECTOR, "#keys-rows tr"):
        if row.find_element(By.CSS_SELECTOR, "td").text.split("\n")[0] == name:
            return row
    return None


def test_no_one_but_an_admin_sees_the_keys(directory: Directory) -> None:
    with page(directory) as driver:
        sign_in(driver, directory.secrets["writer"])
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#rows tr"), "the table")
        time.sleep(1)  # the page asked for the keys with these credentials, and was refused
        assert not driver.find_element(By.ID, "keys").is_displayed()
        assert driver.find_elements(By.CSS_SELECTOR, "#keys-rows tr") == []


def test_usable_at_390_px_without_sideways_scrolling(directory: Directory) -> None:
    with page(directory, size=NARROW) as driver:
        wait_for(driver, lambda: len(driver.find_elements(By.CSS_SELECTOR, "#rows tr")) >= 9, "the table")
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#quality-lint tbody tr"), "the quality view")
        assert driver.execute_script("return window.innerWidth") == NARROW[0]
        assert no_sideways_scrolling(driver), driver.execute_script("return document.documentElement.scrollWidth")
        # The wide table scrolls inside its box, not the page.
        assert driver.execute_script(
            "const box = document.querySelector('#results').parentElement;"
            "return getComputedStyle(box).overflowX === 'auto' && box.clientWidth <= window.innerWidth"
        )
        screenshot(driver, "390")
        # Every registrant's text stays text, here too.
        assert HOSTILE_TITLE in driver.find_element(By.ID, "rows").text
        search(driver, WEATHER_ID)
        wait_for(driver, lambda: driver.find_element(By.ID, "detail").is_displayed(), "details at 390 px")
        wait_for(driver, lambda: facts(driver).get("owner"), "the facts")
        assert no_sideways_scrolling(driver)
        dialog_width = driver.execute_script("return document.getElementById('detail').getBoundingClientRect().width")
        assert dialog_width <= NARROW[0]
        screenshot(driver, "390-details")
    with page(directory) as driver:
        wait_for(driver, lambda: len(driver.find_elements(By.CSS_SELECTOR, "#rows tr")) >= 9, "the table")
        wait_for(driver, lambda: driver.find_elements(By.CSS_SELECTOR, "#quality-lint tbody tr"), "the quality view")
        assert no_sideways_scrolling(driver)
        screenshot(driver, "1440")
