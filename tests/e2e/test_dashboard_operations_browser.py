"""The dashboard's operator panels in headless Chromium, against a server on a PostgreSQL cluster of the test's
own, which the test stops and starts: the health card turns red and green again with it.

Screenshots are saved as test artefacts in ``$REGISTRY_TEST_ARTIFACTS`` (default ``test-artifacts/``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By

from tests.support import browser as chromium
from tests.support.browser import BROWSER, DRIVER, MISSING
from tests.support.dashboard_corpus import WEATHER_ID, register
from tests.support.servers import REPO_ROOT, ServerProcess, ThrowawayPostgres
from tests.support.things import thing

pytestmark = [
    pytest.mark.skipif(BROWSER is None or DRIVER is None, reason=MISSING),
    pytest.mark.skipif(not ThrowawayPostgres.available(), reason="PostgreSQL 15 binaries (initdb, pg_ctl) missing"),
]
ARTIFACTS = Path(os.environ.get("REGISTRY_TEST_ARTIFACTS", REPO_ROOT / "test-artifacts"))
SOON = thing("Expiring soon")


@pytest.fixture(scope="module")
def cluster() -> Iterator[ThrowawayPostgres]:
    with ThrowawayPostgres.migrated() as postgres:
        yield postgres


@pytest.fixture(scope="module")
def server(cluster: ThrowawayPostgres) -> Iterator[ServerProcess]:
    with ServerProcess(cluster.url, {"REGISTRY_PURGE_INTERVAL": "3600"}) as process:
        with httpx.Client(base_url=process.base_url, timeout=30) as client:
            register(client)
            client.put(f"/things/{SOON['id']}", json={**SOON, "registration": {"ttl": 120}}).raise_for_status()
        yield process


@pytest.fixture(scope="module")
def browser(server: ServerProcess) -> Iterator[Any]:
    with chromium.chromium(server.base_url + "/dashboard") as driver:
        yield driver


def wait_for(driver: Any, condition: Callable[[], Any], message: str, within: float = 15.0) -> Any:
    return chromium.wait_for(driver, condition, message, within, on_timeout=lambda: screenshot(driver, "failure"))


def screenshot(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"dashboard-{name}.png"))


def text(driver: Any, element_id: str) -> str:
    return str(driver.find_element(By.ID, element_id).text)


def health(driver: Any) -> str:
    return str(driver.find_element(By.ID, "health").get_attribute("data-state"))


def checks(driver: Any) -> dict[str, str]:
    items = driver.find_elements(By.CSS_SELECTOR, "#health-checks li")
    return {item.get_attribute("data-check"): item.get_attribute("class") for item in items}


def test_health_traffic_leases_and_replayed_activity(browser: Any) -> None:
    wait_for(browser, lambda: health(browser) == "ready", "the health card is green", within=30)
    # Every check /readyz reports, each passing: the embeddings one too (degraded, still passing, on a PostgreSQL
    # without pgvector), and the search words' refresh (nothing to refresh on a new database).
    expected = {"database", "sparql_worker", "change_feed", "embeddings", "search_words"}
    wait_for(browser, lambda: checks(browser) == dict.fromkeys(expected, "ok"), "every check passes", within=30)
    replayed = browser.find_elements(By.CSS_SELECTOR, "#events .event.replayed")
    assert len(replayed) >= 9  # the corpus and the expiring thing, shown on load rather than an empty panel
    assert replayed[0].get_attribute("data-id") == SOON["id"]  # newest first
    assert not browser.find_element(By.ID, "events-empty").is_displayed()
    wait_for(browser, lambda: text(browser, "stat-expiring") == "1", "one lease expires within 5 minutes")
    assert text(browser, "stat-expired") == "0 expired, awaiting purge"
    wait_for(browser, lambda: re.fullmatch(r"\d+\.\d/s", text(browser, "stat-rate")), "a request rate", within=20)
    classes = text(browser, "stat-errors").splitlines()
    assert [line.split(":")[0] for line in classes] == ["5xx", "401", "403", "429", "other 4xx"]
    assert all(re.fullmatch(r"[\w ]+: \d+\.\d\d/s, \d+\.\d %", line) for line in classes)
    assert text(browser, "stat-latency").startswith("latency:")
    screenshot(browser, "operator-panels")


def test_listing_by_expiry_and_sortable_columns(browser: Any) -> None:
    wait_for(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, "#rows tr")) >= 9, "the table")
    browser.find_element(By.ID, "show-expiring").click()
    wait_for(browser, lambda: "soonest to expire first" in text(browser, "matches"), "the listing by expiry")
    ids = [row.get_attribute("data-id") for row in browser.find_elements(By.CSS_SELECTOR, "#rows tr")]
    assert ids[0] == SOON["id"]
    assert len(ids) == 3  # the descriptions with a lease: the expiring one and two of the corpus
    expires = browser.find_element(By.CSS_SELECTOR, '#results th[data-sort="expires"]')
    assert expires.get_attribute("aria-sort") == "ascending"

    browser.find_element(By.CSS_SELECTOR, '#results th[data-sort="title"] .sort').click()
    wait_for(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, "#rows tr")) >= 9, "all rows again")
    kind = browser.find_element(By.CSS_SELECTOR, '#results th[data-column="kind"]')
    kind.find_element(By.CLASS_NAME, "sort").click()
    kinds = [row.get_attribute("data-kind") for row in browser.find_elements(By.CSS_SELECTOR, "#rows tr")]
    assert kinds == sorted(kinds)
    kind.find_element(By.CLASS_NAME, "sort").click()
    kinds = [row.get_attribute("data-kind") for row in browser.find_elements(By.CSS_SELECTOR, "#rows tr")]
    assert kinds == sorted(kinds, reverse=True)
    assert kind.get_attribute("aria-sort") == "descending"


def test_full_ids_with_a_copy_button(browser: Any) -> None:
    row = wait_for(browser, lambda: browser.find_element(By.CSS_SELECTOR, f'#rows tr[data-id="{WEATHER_ID}"]'), "row")
    assert row.find_element(By.CSS_SELECTOR, ".full-id code").text == WEATHER_ID
    button = row.find_element(By.CSS_SELECTOR, ".full-id .copy")
    button.click()
    wait_for(browser, lambda: button.text == "copied", "the copy button confirms")
    assert not browser.find_element(By.ID, "detail").is_displayed()  # copying does not open the details


def test_quality_view_and_one_count_per_capability(browser: Any) -> None:
    wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#quality-bumps tbody tr"), "the bumps")
    bumps = browser.find_elements(By.CSS_SELECTOR, "#quality-bumps tbody tr")
    weather = [row for row in bumps if WEATHER_ID in row.text]
    assert weather
    assert weather[0].get_attribute("data-verdict") == "breaking"
    lint = browser.find_elements(By.CSS_SELECTOR, "#quality-lint tbody tr")
    assert lint
    warnings = browser.find_element(By.CSS_SELECTOR, '#quality-lint th[data-column="warnings"] .sort')
    warnings.click()
    counts = [
        int(row.get_attribute("data-warnings"))
        for row in browser.find_elements(By.CSS_SELECTOR, "#quality-lint tbody tr")
    ]
    assert counts == sorted(counts)
    values = [node.text for node in browser.find_elements(By.CSS_SELECTOR, "#facet-capability .facet-value")]
    assert values
    assert len(values) == len(set(values))
    assert "weather-forecast" not in values or "urn:lmos:capability:weather" not in values
    browser.execute_script("document.getElementById('quality').scrollIntoView()")
    screenshot(browser, "quality")


def test_health_card_turns_red_when_the_database_stops(browser: Any, cluster: ThrowawayPostgres) -> None:
    browser.execute_script("window.scrollTo(0, 0)")
    wait_for(browser, lambda: health(browser) == "ready", "green before the outage", within=30)
    cluster.stop()
    try:
        wait_for(browser, lambda: health(browser) == "unready", "the health card turns red", within=20)
        assert checks(browser)["database"] == "failing"
        assert text(browser, "health-state") == "not ready"
        screenshot(browser, "database-down")
    finally:
        cluster.start()
    wait_for(browser, lambda: health(browser) == "ready", "green again without a restart", within=40)
    assert checks(browser)["database"] == "ok"
    screenshot(browser, "database-back")
