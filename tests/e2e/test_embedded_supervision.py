"""The embedded PostgreSQL is supervised (issue 14): restarted when killed, one ``registry serve`` per data
directory, and a server left by a crashed run is taken over and stopped by the next clean shutdown."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

from tests.e2e.test_quickstart import WEATHER_AGENT, quickstart_server, registry_script
from tests.support.servers import free_port


def postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "pgdata" / "postmaster.pid").read_text().split()[0])


def wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, OSError, ValueError):
            if condition():
                return True
        time.sleep(0.5)
    return False


def test_embedded_postgres_is_supervised(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    document = {**WEATHER_AGENT, "id": "urn:test:supervised:1"}
    with quickstart_server(data_dir, port, tmp_path / "first.log") as first:
        created = httpx.put(
            f"{base}/things/{document['id']}",
            content=json.dumps(document),
            headers={"Content-Type": "application/td+json"},
            timeout=30,
        )
        assert created.status_code == 201, created.text

        # A second server on the same data directory refuses to start.
        second = subprocess.run(
            [registry_script(), "serve", "--data-dir", str(data_dir), "--port", str(free_port())],
            capture_output=True,
            timeout=60,
            env={key: value for key, value in os.environ.items() if not key.startswith("REGISTRY_")},
        )
        assert second.returncode != 0
        assert b"in use by another registry serve" in second.stderr + second.stdout

        # kill -9 of the postmaster: the directory recovers by itself. A read may be answered from the response
        # cache meanwhile; a write reaches the database, and the supervisor started a new postmaster for it.
        killed = postmaster_pid(data_dir)
        os.kill(killed, signal.SIGKILL)
        restarted = {**document, "title": "Restarted"}

        def recovered() -> bool:
            written = httpx.put(
                f"{base}/things/{document['id']}",
                content=json.dumps(restarted),
                headers={"Content-Type": "application/td+json"},
                timeout=5,
            )
            return written.status_code == 204 and postmaster_pid(data_dir) != killed

        assert wait_until(recovered, 60)
        assert httpx.get(f"{base}/things/{document['id']}", timeout=5).json()["title"] == "Restarted"

        # kill -9 of the registry leaves its PostgreSQL running ...
        left = postmaster_pid(data_dir)
        first.kill()
        first.wait()
    assert psutil.pid_exists(left)
    # ... the next run takes it over, and its clean shutdown stops PostgreSQL.
    with quickstart_server(data_dir, port, tmp_path / "second.log"):
        assert httpx.get(f"{base}/things/{document['id']}", timeout=10).status_code == 200
        running = postmaster_pid(data_dir)
    assert wait_until(lambda: not psutil.pid_exists(running), 30)
    assert not psutil.pid_exists(left)
