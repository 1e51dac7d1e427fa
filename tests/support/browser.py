"""Headless Chromium for browser tests: where it is, and flags that keep it off every network but loopback."""

from __future__ import annotations

import shutil

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
