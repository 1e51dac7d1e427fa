"""The dashboard at 10,000 descriptions: each request the page makes on load, and the whole page in headless
Chromium until its table, counts, quality view and activity are shown, against a reference directory of 100
descriptions measured in the same run, interleaved (one round of each, then again).

    python bench/bench_dashboard.py [--n 10000] [--reference 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_memory import load
from bench.rounds import add_logging_option, machine, served, use_logging_option
from tests.support.browser import BROWSER, CHROMIUM_FLAGS, DRIVER
from tests.support.servers import LOCAL_POSTGRES, ServerProcess, fresh_database

#: What the page asks for when it opens (dashboard.js), besides its three files.
REQUESTS = {
    "facets": ("/api/v1/facets", {}),
    "total": ("/things", {"limit": "1", "format": "collection"}),
    "index stats": ("/search/stats", {}),
    "first page + facets": ("/api/v1/search", {"limit": "25", "facets": "true"}),
    "by expiry": ("/api/v1/search", {"limit": "25", "sort": "expires"}),
    "quality": ("/api/v1/quality", {"limit": "100"}),
    "latest changes": ("/api/v1/changes", {"limit": "50"}),
    "metrics": ("/metrics", {}),
    "readyz": ("/readyz", {}),
}


@contextmanager
def directory(count: int) -> Iterator[ServerProcess]:
    with fresh_database(LOCAL_POSTGRES) as url:
        asyncio.run(load(url, 0, count))
        with ServerProcess(url, served({"REGISTRY_PURGE_INTERVAL": "3600"})) as server:
            deadline = time.monotonic() + 600
            while httpx.get(server.base_url + "/readyz").status_code != 200 and time.monotonic() < deadline:
                time.sleep(0.5)
            yield server


def time_requests(base_url: str) -> dict[str, float]:
    with httpx.Client(base_url=base_url, timeout=60) as client:
        timings = {}
        for name, (path, params) in REQUESTS.items():
            started = time.perf_counter()
            client.get(path, params=params).raise_for_status()
            timings[name] = (time.perf_counter() - started) * 1000
        return timings


def page_load(driver: object, base_url: str) -> float:
    """Milliseconds from navigation until the table, the counts, the quality view and the activity are shown."""
    script = """
      const done = arguments[arguments.length - 1];
      const shown = () => document.querySelectorAll('#rows tr').length > 0
        && /^\\d+$/.test(document.getElementById('stat-total').textContent)
        && document.getElementById('quality-lint-count').textContent !== ''
        && document.querySelectorAll('#events .event').length > 0;
      const wait = () => shown() ? done(performance.now()) : setTimeout(wait, 5);
      wait();
    """
    driver.get(base_url + "/dashboard")  # type: ignore[attr-defined]
    return float(driver.execute_async_script(script))  # type: ignore[attr-defined]


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):7.1f} ms (min {min(values):.1f}, max {max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--reference", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    add_logging_option(parser)
    arguments = parser.parse_args()
    print(use_logging_option(arguments))
    print(machine())
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with ExitStack() as stack:
        servers = {
            arguments.reference: stack.enter_context(directory(arguments.reference)),
            arguments.n: stack.enter_context(directory(arguments.n)),
        }
        options = webdriver.ChromeOptions()
        options.binary_location = BROWSER
        profile = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-chromium-"))
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(DRIVER), options=options)
        stack.callback(driver.quit)
        driver.set_script_timeout(60)
        requests: dict[int, dict[str, list[float]]] = {count: {name: [] for name in REQUESTS} for count in servers}
        pages: dict[int, list[float]] = {count: [] for count in servers}
        for _ in range(arguments.rounds):
            for count, server in servers.items():  # interleaved: the reference, then the large directory
                for name, value in time_requests(server.base_url).items():
                    requests[count][name].append(value)
                pages[count].append(page_load(driver, server.base_url))
        print(f"load average after: {os.getloadavg()}")
        small, large = arguments.reference, arguments.n
        for name in REQUESTS:
            ratio = statistics.median(requests[large][name]) / statistics.median(requests[small][name])
            print(
                f"{name:>20}: {large}: {spread(requests[large][name])}; {small}: "
                f"{spread(requests[small][name])}; ratio {ratio:.2f}"
            )
        ratio = statistics.median(pages[large]) / statistics.median(pages[small])
        print(
            f"{'whole page':>20}: {large}: {spread(pages[large])}; {small}: {spread(pages[small])}; ratio {ratio:.2f}"
        )


if __name__ == "__main__":
    main()
