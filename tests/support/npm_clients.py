"""Real npm clients (node-wot, the A2A JavaScript SDK, Redocly CLI) for the e2e tests, at the exact versions of
``tests/clients/package-lock.json``.

They are installed once with ``npm ci`` into a cache directory named after the lock file's hash
(``$REGISTRY_TEST_NPM_CACHE``, default ``~/.cache/lmos-registry/npm-clients``), so a second run installs nothing.
The scripts of ``tests/clients/*.mjs`` are copied beside ``node_modules`` so Node resolves their imports there.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

CLIENTS = Path(__file__).resolve().parents[1] / "clients"
_MANIFESTS = ("package.json", "package-lock.json")


def _cache_root() -> Path:
    configured = os.environ.get("REGISTRY_TEST_NPM_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "lmos-registry" / "npm-clients"


def _lock_digest() -> str:
    digest = hashlib.sha256()
    for name in _MANIFESTS:
        digest.update((CLIENTS / name).read_bytes())
    return digest.hexdigest()[:16]


def install_npm_clients() -> Path:
    """The directory holding the installed clients and the test scripts; skips the test when npm is missing."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("npm and node are needed to run the real JavaScript clients (CI has node 20 and npm)")
    target = _cache_root() / _lock_digest()
    if not (target / "node_modules").is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="install-", dir=target.parent))
        for name in _MANIFESTS:
            shutil.copy(CLIENTS / name, staging / name)
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=staging,
            check=True,
            timeout=600,
        )
        try:
            staging.rename(target)
        except OSError:  # another run installed it meanwhile
            shutil.rmtree(staging, ignore_errors=True)
    for script in CLIENTS.glob("*.mjs"):
        shutil.copy(script, target / script.name)
    return target


def run_node(clients: Path, script: str, *arguments: str, timeout: float = 120) -> dict[str, Any]:
    """Runs one of the scripts and returns the JSON object it prints last on stdout."""
    completed = subprocess.run(
        ["node", script, *arguments],
        cwd=clients,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
    failure = f"{script} failed:\n{completed.stdout}\n{completed.stderr[-4000:]}"
    assert completed.returncode == 0, failure
    assert lines, failure
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def npm_binary(clients: Path, name: str) -> Path:
    return clients / "node_modules" / ".bin" / name
