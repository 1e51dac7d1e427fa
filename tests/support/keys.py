"""API keys for tests, made as an operator makes them: with the ``registry keys`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.servers import REPO_ROOT


def keys_command(database_url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "registry", "keys", *arguments],
        cwd=REPO_ROOT,
        env={**os.environ, "REGISTRY_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        check=True,
    )


def create_key(database_url: str, name: str, *options: str) -> str:
    """``registry keys create``; returns the key's secret."""
    secret: str = json.loads(keys_command(database_url, "create", "--name", name, "--json", *options).stdout)["secret"]
    return secret
