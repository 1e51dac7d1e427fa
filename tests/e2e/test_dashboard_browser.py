"""The ops dashboard in headless Chromium (driven by Selenium) against a real server with its own database.

Skipped, with the reason, where no Chromium or ChromeDriver is installed (Debian: ``apt-get install chromium
chromium-driver``). The server gets a database of its own so the counts on the page are exactly the corpus's.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By

from tests.support import browser as chromium
from tests.support.browser import BROWSER, DRIVER, MISSING
from tests.support.dashboard_corpus import (
    HOSTILE_DESCRIPTION,
    HOSTILE_ID,
    HOSTILE_TITLE,
    THERMOSTAT_ID,
    WEATHER_ID,
    register,
)
from tests.support.servers import ServerProcess, fresh_database
from tests.support.things import thing

pytestmark = pytest.mark.skipif(BROWSER is None or DRIVER is None, reason=MISSING)
WAIT = 10.0
#: Run before the page's own scripts (injected through DevTools, so the page's CSP does not apply to it).
RECORD_PROBLEMS = """
window.problems = [];
document.addEventListener("securitypolicyviolation", (event) =>
  window.problems.push(`CSP ${event.violatedDirective} blocked ${event.blockedURI || "inline code"}`));
window.addEventListener("error", (event) => {
  if (event.message) window.problems.push(`error ${event.message}`);
});
window.addEventListener("unhandledrejection", (event) => window.problems.push(`rejection ${event.reason}`));
"""
MERGE_PATCH = "application/merge-patch+json"
#: The search's grading of hits for a need in words (match, score, matched, retrieval), put on every answer of a
#: search with text: the page's rendering of it is what is tested, whatever grades the server gives.
GRADED_SEARCH = """
const realFetch = window.fetch.bind(window);
window.fetch = async (input, init) => {
  const response = await realFetch(input, init);
  const address = new URL(input instanceof Request ? input.url : String(input), location.href);
  if (!address.pathname.endsWith("/api/v1/search") || !address.searchParams.get("q")) return response;
  const page = await response.clone().json();
  page.items.forEach((item, index) => {
    const capability = (item.capabilities || [])[0] || {};
    item.match = index === 0 ? "strong" : "weak";
    item.score = index === 0 ? 0.91 : 0.2;
    item.matched = capability.name ? [{ name: capability.name, id: capability.id }] : [];
  });
  page.retrieval = "hybrid";
  return new Response(JSON.stringify(page), { status: response.status, headers: response.headers });
};
"""


@pytest.fixture(scope="module")
def dashboard_server(postgres_admin_url: str) -> Iterator[ServerProcess]:
    with fresh_database(postgres_admin_url) as url, ServerProcess(url) as server:
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            register(client)
        yield server


@pytest.fixture(scope="module")
def browser(dashboard_server: ServerProcess) -> Iterator[Any]:
    url = dashboard_server.base_url + "/dashboard"
    with chromium.chromium(url, before_scripts=RECORD_PROBLEMS, console=True) as driver:
        yield driver


def wait_for(driver: Any, condition: Callable[[], Any], message: str) -> Any:
    return chromium.wait_for(driver, condition, message, WAIT)


def text(driver: Any, element_id: str) -> str:
    return str(driver.find_element(By.ID, element_id).text)


def rows(driver: Any) -> list[Any]:
    return list(driver.find_elements(By.CSS_SELECTOR, "#rows tr"))


def facet_counts(driver: Any, name: str) -> dict[str, str]:
    buttons = driver.find_elements(By.CSS_SELECTOR, f"#facet-{name} .facet")
    return {
        button.find_element(By.CLASS_NAME, "facet-value").text: button.find_element(By.CLASS_NAME, "count").text
        for button in buttons
    }


def test_counts_facets_and_table(browser: Any) -> None:
    wait_for(browser, lambda: len(rows(browser)) == 8, "the table lists the corpus")
    wait_for(browser, lambda: text(browser, "stat-total") == "8", "the total is shown")
    assert [text(browser, f"stat-{kind}") for kind in ("agent", "tool", "thing")] == ["4", "3", "1"]
    wait_for(
        browser,
        lambda: text(browser, "stat-index").endswith(("descriptions", "building", "idle")),
        "the SPARQL index state",
    )
    assert facet_counts(browser, "vendor")["Deutsche Telekom AG"] == "3"
    assert facet_counts(browser, "kind") == {"agent": "4", "tool": "3", "thing": "1"}
    weather = browser.find_element(By.CSS_SELECTOR, f'#rows tr[data-id="{WEATHER_ID}"]')
    assert "Weather Agent" in weather.text
    assert "2.0.0" in weather.text
    assert "weather-forecast 2.0.0" in weather.text
    wait_for(browser, lambda: text(browser, "feed-status") == "live", "the activity feed is connected")


def test_hostile_title_is_rendered_as_text(browser: Any) -> None:
    wait_for(browser, lambda: len(rows(browser)) >= 8, "the table lists the corpus")
    row = browser.find_element(By.CSS_SELECTOR, f'#rows tr[data-id="{HOSTILE_ID}"]')
    title = row.find_element(By.CLASS_NAME, "title")
    assert title.text.splitlines() == [HOSTILE_TITLE, HOSTILE_DESCRIPTION, HOSTILE_ID, "copy"]
    assert "Evil <b>Corp</b>" in row.text
    assert browser.find_elements(By.CSS_SELECTOR, "img, #rows script, #rows b") == []
    assert browser.title == "Registry dashboard"  # the hostile description's script did not run
    row.click()
    wait_for(browser, lambda: text(browser, "detail-title") == HOSTILE_TITLE, "the summary of the hostile tool opens")
    assert text(browser, "detail-description") == HOSTILE_DESCRIPTION
    assert browser.find_elements(By.CSS_SELECTOR, "dialog img") == []
    browser.find_element(By.ID, "detail-close").click()


def test_filters_by_facet_and_text(browser: Any) -> None:
    wait_for(browser, lambda: facet_counts(browser, "vendor"), "facets are shown")
    acme = browser.find_element(By.CSS_SELECTOR, '#facet-vendor .facet[title="Filter by vendor Acme Corp"]')
    acme.click()
    wait_for(browser, lambda: len(rows(browser)) == 2, "the vendor facet narrows the table to Acme's two")
    assert text(browser, "matches") == "2 of 2 shown"
    assert browser.find_element(By.ID, "vendor").get_attribute("value") == "Acme Corp"
    browser.find_element(By.ID, "clear").click()
    wait_for(browser, lambda: len(rows(browser)) == 8, "clearing shows everything again")
    browser.find_element(By.ID, "q").send_keys("invoices")
    browser.find_element(By.CSS_SELECTOR, "#search button[type=submit]").click()
    wait_for(
        browser,
        lambda: [row.get_attribute("data-id") for row in rows(browser)] == ["urn:dashboard:agent:billing"],
        "the text search finds the billing agent",
    )
    browser.find_element(By.ID, "clear").click()
    wait_for(browser, lambda: len(rows(browser)) == 8, "clearing shows everything again")


def test_a_need_in_words_shows_match_quality_and_the_matched_capability(dashboard_server: ServerProcess) -> None:
    url = dashboard_server.base_url + "/dashboard?q=invoices"
    with chromium.chromium(url, before_scripts=RECORD_PROBLEMS + GRADED_SEARCH) as page:
        wait_for(page, lambda: page.find_elements(By.CSS_SELECTOR, "#rows tr .match"), "the hits show their match")
        first = rows(page)[0]
        assert first.get_attribute("data-match") == "strong"
        assert first.find_element(By.CLASS_NAME, "match").text == "strong match"
        assert first.find_element(By.CLASS_NAME, "match").get_attribute("title") == "score 0.91"
        assert first.find_element(By.CLASS_NAME, "matched").text == "matched billing"
        assert first.find_element(By.CLASS_NAME, "chip-matched").text.startswith("billing")
        assert text(page, "matches").endswith("(hybrid retrieval)")
        assert page.execute_script("return window.problems") == []


def test_details_show_summary_versions_and_raw_description(browser: Any) -> None:
    wait_for(browser, lambda: len(rows(browser)) >= 8, "the table lists the corpus")
    browser.find_element(By.CSS_SELECTOR, f'#rows tr[data-id="{WEATHER_ID}"]').click()
    wait_for(browser, lambda: text(browser, "detail-title") == "Weather Agent", "the summary opens")
    wait_for(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, "#detail-versions tr")) == 3, "versions")
    versions = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#detail-versions tr")]
    assert [version.split()[0] for version in versions] == ["2.0.0", "1.1.0", "1.0.0"]
    assert "current" in versions[0]
    assert "breaking" in versions[0]
    assert "compatible" in versions[1]
    assert "weather-forecast" in text(browser, "detail-capabilities")
    wait_for(browser, lambda: WEATHER_ID in text(browser, "detail-raw"), "the raw description is shown")
    assert '"registration"' in text(browser, "detail-raw")
    browser.find_element(By.ID, "detail-close").click()


def test_details_of_an_id_with_slashes_query_and_fragment(browser: Any) -> None:
    wait_for(browser, lambda: len(rows(browser)) >= 8, "the table lists the corpus")
    browser.find_element(By.CSS_SELECTOR, f'#rows tr[data-id="{THERMOSTAT_ID}"]').click()
    wait_for(browser, lambda: text(browser, "detail-title") == "Office Thermostat", "the summary opens")
    wait_for(browser, lambda: THERMOSTAT_ID in text(browser, "detail-raw"), "the raw description is shown")
    assert "No versions kept" in text(browser, "detail-versions")
    assert not browser.find_element(By.ID, "detail-error").is_displayed()
    browser.find_element(By.ID, "detail-close").click()


def test_live_feed_and_paging(browser: Any, dashboard_server: ServerProcess) -> None:
    wait_for(browser, lambda: text(browser, "feed-status") == "live", "the activity feed is connected")
    token = uuid.uuid4().hex[:6]
    added = [thing(f"Live {token} {index:02d}") for index in range(20)]
    with httpx.Client(base_url=dashboard_server.base_url, timeout=30) as client:
        for document in added:
            client.put(f"/things/{document['id']}", json=document, headers={"content-type": "application/td+json"})
        client.delete(f"/things/{added[0]['id']}").raise_for_status()
        billing = "urn:dashboard:agent:billing"
        patched = client.patch(
            f"/things/{billing}", json={"description": "Corrects invoices too."}, headers={"content-type": MERGE_PATCH}
        )
        patched.raise_for_status()
    feed = "#events .event:not(.replayed)"  # live ones, after the changes shown on load
    wait_for(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, feed)) == 22, "every change reaches the feed")
    newest, deleted = browser.find_elements(By.CSS_SELECTOR, feed)[:2]
    assert newest.get_attribute("data-id") == billing
    assert newest.find_element(By.CLASS_NAME, "verb").text == "updated"
    assert newest.find_element(By.CLASS_NAME, "name").text == "Billing Agent"  # a title the table showed
    assert deleted.find_element(By.CLASS_NAME, "verb").text == "deleted"
    assert deleted.find_element(By.CLASS_NAME, "name").text == added[0]["id"]  # not seen before: named by id
    wait_for(browser, lambda: text(browser, "stat-total") == "27", "the counts follow the changes")
    assert browser.find_element(By.ID, "table-notice").is_displayed()

    browser.find_element(By.CSS_SELECTOR, "#table-notice button").click()
    wait_for(browser, lambda: len(rows(browser)) == 25, "the first page has 25 rows")
    assert text(browser, "matches") == "25 of 27 shown"
    more = browser.find_element(By.ID, "more")
    assert more.is_displayed()
    more.click()
    wait_for(browser, lambda: len(rows(browser)) == 27, "the next cursor page is appended")
    assert text(browser, "matches") == "27 of 27 shown"
    assert not more.is_displayed()
    ids = [row.get_attribute("data-id") for row in rows(browser)]
    assert len(set(ids)) == 27


def test_no_script_errors(browser: Any) -> None:
    """No script error and no Content-Security-Policy violation (answers such as the 404 of /versions for a
    description without a version are logged by the browser as network errors: expected)."""
    log = browser.get_log("browser")
    errors = [entry for entry in log if entry["level"] == "SEVERE" and entry["source"] != "network"]
    assert errors == []
    assert browser.execute_script("return window.problems") == []


def test_feed_after_a_restart(browser: Any, dashboard_server: ServerProcess) -> None:
    """EventSource reconnects by itself with Last-Event-ID, and the registry replays the changes made meanwhile.

    A page that has received no live event yet resumes too: its stream started after the newest change it showed
    on load (``/events?lastEventId=``), and a reconnection asks for the same. Two windows show both cases.
    """
    feed = "#events .event:not(.replayed)"
    resuming = browser.current_window_handle
    wait_for(browser, lambda: text(browser, "feed-status") == "live", "the activity feed is connected")
    with httpx.Client(base_url=dashboard_server.base_url) as client:
        first = thing("Before the restart")
        client.put(f"/things/{first['id']}", json=first, headers={"content-type": "application/td+json"})
        wait_for(
            browser,
            lambda: browser.find_element(By.CSS_SELECTOR, feed).get_attribute("data-id") == first["id"],
            "a first event",
        )
        seen = len(browser.find_elements(By.CSS_SELECTOR, feed))
        total = int(client.get("/things", params={"limit": 1, "format": "collection"}).json()["total"])
    browser.switch_to.new_window("window")
    fresh = browser.current_window_handle
    browser.get(dashboard_server.base_url + "/dashboard")
    wait_for(browser, lambda: text(browser, "stat-total") == str(total), "the second window's counts")
    wait_for(browser, lambda: text(browser, "feed-status") == "live", "the second window's feed")

    dashboard_server.kill()
    wait_for(browser, lambda: text(browser, "feed-status") != "live", "the page notices the server is gone")
    missed = [thing(f"Missed {index}") for index in range(2)]
    with ServerProcess(dashboard_server.database_url) as other, httpx.Client(base_url=other.base_url) as client:
        for document in missed:
            client.put(f"/things/{document['id']}", json=document, headers={"content-type": "application/td+json"})
    with ServerProcess(dashboard_server.database_url, port=dashboard_server.port):
        wait_for(browser, lambda: text(browser, "feed-status") == "live", "the second window's feed reconnects")
        wait_for(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, feed)) == 2, "the missed changes")
        newest = browser.find_elements(By.CSS_SELECTOR, feed)
        assert [item.get_attribute("data-id") for item in newest] == [missed[1]["id"], missed[0]["id"]]
        wait_for(browser, lambda: text(browser, "stat-total") == str(total + 2), "the counts are reloaded")

        browser.switch_to.window(resuming)
        wait_for(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, feed)) == seen + 2, "the missed changes")
        newest = browser.find_elements(By.CSS_SELECTOR, feed)[:2]
        assert [item.get_attribute("data-id") for item in newest] == [missed[1]["id"], missed[0]["id"]]
        wait_for(browser, lambda: text(browser, "stat-total") == str(total + 2), "the counts follow the replay")
    browser.switch_to.window(fresh)
    browser.close()
    browser.switch_to.window(resuming)
