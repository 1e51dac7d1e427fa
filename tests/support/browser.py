"""Headless Chromium for browser tests: where it is, and flags that keep it off every network but loopback."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

BROWSER = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
DRIVER = shutil.which("chromedriver")
MISSING = "no Chromium/ChromeDriver binary on PATH (Debian: apt-get install chromium chromium-driver)"
#: Without the networking flags Chromium tries to reach Google's hosts, which a closed network refuses.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,900",
)
#: No host name resolves and no address but loopback is reached: a page that needs another host fails.
LOOPBACK_ONLY = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


@contextlib.contextmanager
def chromium(url: str, *, before_scripts: str | None = None, console: bool = False) -> Iterator[Any]:
    """A headless Chromium on a throwaway profile, opened at ``url``. ``before_scripts`` runs before the page's own
    scripts (through DevTools, so the page's CSP does not apply to it); ``console`` keeps the browser's log."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert BROWSER is not None, MISSING
    assert DRIVER is not None, MISSING
    options = webdriver.ChromeOptions()
    options.binary_location = BROWSER
    with tempfile.TemporaryDirectory(prefix="dashboard-chromium-") as profile:
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        if console:
            options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(DRIVER), options=options)
        try:
            if before_scripts:
                driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": before_scripts})
            driver.get(url)
            yield driver
        finally:
            driver.quit()


def wait_for(
    driver: Any, condition: Callable[[], Any], message: str, within: float, on_timeout: Callable[[], None] | None = None
) -> Any:
    """``condition()`` once it is truthy; a test failure saying ``message`` otherwise. The dashboard replaces rows
    and facets wholesale, so an element found a moment ago may be gone: stale elements are retried."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        waiting = WebDriverWait(driver, within, ignored_exceptions=(StaleElementReferenceException,))
        return waiting.until(lambda _: condition())
    except TimeoutException:
        if on_timeout is not None:
            on_timeout()
        pytest.fail(f"{message} (not within {within} s)")


def clicked(driver: Any, selector: str) -> bool:
    """A ``wait_for`` condition that clicks the element ``selector`` names: the click is retried with the lookup
    when the dashboard replaces the element in between."""
    from selenium.webdriver.common.by import By

    driver.find_element(By.CSS_SELECTOR, selector).click()
    return True
