"""The example agent process: registers on startup, renews past its ttl, leaves on SIGKILL (by expiry) and
SIGTERM (at once); the capability waiter sees it appear."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.servers import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
WEATHER_ID = json.loads((ROOT / "tests/fixtures/weather-agent.td.json").read_text())["id"]
TTL = 2.0
#: Run the examples against this checkout's ``registry`` package.
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _present(client: httpx.Client) -> bool:
    return client.get(f"/things/{WEATHER_ID}").status_code == 200


def _wait(condition: object, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if condition():  # type: ignore[operator]
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s")


@pytest.fixture
def agent(base_url: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "examples/weather_agent.py", "--url", base_url, "--ttl", str(TTL)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().startswith("registered")
    yield process
    process.kill()
    process.wait()
    process.stdout.close()


def test_agent_lease_outlives_ttl_and_expires_after_sigkill(agent: subprocess.Popen[str], client: httpx.Client) -> None:
    assert _present(client)
    time.sleep(TTL * 1.75)
    assert _present(client), "the lease was not renewed"
    agent.kill()
    agent.wait()
    assert _wait(lambda: not _present(client), TTL + 0.5) <= TTL + 0.5


def test_agent_deregisters_on_sigterm(agent: subprocess.Popen[str], client: httpx.Client) -> None:
    assert _present(client)
    agent.terminate()
    assert agent.wait(5) == 0
    assert not _present(client)


def _waiter(base_url: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "examples/wait_for_capability.py", "getWeather", "--url", base_url, *args],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_wait_for_capability_resolves_once_a_version_in_range_appears(
    start_server: Callable[..., ServerProcess], own_database_url: str
) -> None:
    # A server of its own: other tests register providers of getWeather in range on the shared one.
    base_url = start_server(database=own_database_url).base_url
    client = httpx.Client(base_url=base_url, timeout=30)
    document = json.loads((ROOT / "tests/fixtures/weather-agent.td.json").read_text())
    waiter = _waiter(base_url, "--range", "^1.2", "--timeout", "20")
    assert waiter.stderr is not None
    # Subscribed, then resolved once: nothing offers getWeather yet.
    assert waiter.stderr.readline().startswith("waiting (no_provider)")
    # A provider outside the range wakes the waiter, which resolves again and keeps waiting; the next version,
    # in range, ends the wait. Each step is the waiter's own report: no sleeps.
    assert client.put(f"/things/{WEATHER_ID}", json={**document, "version": {"instance": "1.1.0"}}).status_code == 201
    assert waiter.stderr.readline().startswith("waiting (no_version_in_range)")
    assert waiter.poll() is None, "resolved although no version was in range"
    assert client.put(f"/things/{WEATHER_ID}", json={**document, "version": {"instance": "1.2.3"}}).status_code == 204
    output, errors = waiter.communicate(timeout=20)
    assert waiter.returncode == 0, errors
    headline, resolution = output.split("\n", 1)
    assert headline == f"getWeather is offered by {WEATHER_ID} (version 1.2.3)"
    resolved = json.loads(resolution)
    assert (resolved["resolved"], resolved["range"], resolved["provider"]["id"]) == (True, "^1.2", WEATHER_ID)
    client.close()


def test_wait_for_capability_gives_the_reason_on_timeout(base_url: str, client: httpx.Client) -> None:
    document = json.loads((ROOT / "tests/fixtures/weather-agent.td.json").read_text())
    assert client.put(f"/things/{WEATHER_ID}", json={**document, "version": {"instance": "1.0.0"}}).status_code in (
        201,
        204,
    )
    waiter = _waiter(base_url, "--range", ">=2", "--timeout", "2")
    _, errors = waiter.communicate(timeout=20)
    assert waiter.returncode == 1
    assert "no_version_in_range" in errors
    client.delete(f"/things/{WEATHER_ID}")


def test_wait_for_capability_resolves_to_the_example_agent(
    start_server: Callable[..., ServerProcess], own_database_url: str
) -> None:
    """The two examples together, as docs say: the waiter first, then the example agent with its own description."""
    base_url = start_server(database=own_database_url).base_url
    waiter = _waiter(base_url, "--range", "^1.2", "--timeout", "30")
    assert waiter.stderr is not None
    assert waiter.stderr.readline().startswith("waiting (no_provider)")
    agent = subprocess.Popen(
        [sys.executable, "examples/weather_agent.py", "--url", base_url],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        output, errors = waiter.communicate(timeout=30)
        assert waiter.returncode == 0, errors
        headline, resolution = output.split("\n", 1)
        assert headline == f"getWeather is offered by {WEATHER_ID} (version 1.2.0)"
        assert json.loads(resolution)["provider"]["capability"] == "getWeather"
        summary = httpx.get(f"{base_url}/api/v1/things/{WEATHER_ID}/summary", timeout=30).json()
        assert {"source": "lmos", "version": "1.2.0"}.items() <= summary["capabilities"][0].items()
    finally:
        agent.terminate()
        assert agent.wait(10) == 0
        assert agent.stdout is not None
        agent.stdout.close()
    assert httpx.get(f"{base_url}/things/{WEATHER_ID}", timeout=30).status_code == 404
