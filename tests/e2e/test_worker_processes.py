"""The children of ``registry serve --workers N`` (server processes and the SPARQL worker) die with it, however it
dies: after ``kill -9`` of the parent, none is left serving on the port, and a new ``serve`` starts on it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx

from tests.support.servers import ServerProcess, wait_until


def _parents() -> dict[int, int]:
    """pid → parent pid of every live process (zombies count as gone)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, parent = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":
            parents[int(entry.name)] = int(parent)
    return parents


def _descendants(root: int) -> set[int]:
    parents = _parents()
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    return pids & set(_parents())


def test_kill_9_of_the_workers_parent_ends_every_child_and_frees_the_port(own_database_url: str) -> None:
    parent = ServerProcess(own_database_url, {"REGISTRY_WORKERS": "2"}).start()
    try:
        assert parent.process is not None
        # Two server processes, and the SPARQL worker one of them runs.
        wait_until(lambda: len(_descendants(parent.process.pid)) >= 3, 30, "the workers and the SPARQL worker")
        children = _descendants(parent.process.pid)
        os.kill(parent.process.pid, signal.SIGKILL)
        parent.process.wait(10)
        wait_until(lambda: not _alive(children), 10, f"no child left of {sorted(children)}")
        successor = ServerProcess(own_database_url, port=parent.port).start()
        try:
            assert httpx.get(successor.base_url + "/livez", timeout=5).status_code == 200
        finally:
            successor.close()
    finally:
        parent.close()
