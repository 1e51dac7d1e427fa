"""API keys for tests, made as an operator makes them: with the ``registry keys`` command."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from tests.support.servers import REPO_ROOT
from tests.support.zygote import run_registry


def keys_command(database_url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return run_registry(
        ["keys", *arguments], cwd=REPO_ROOT, env={**os.environ, "REGISTRY_DATABASE_URL": database_url}, check=True
    )


def create_key(database_url: str, name: str, *options: str) -> str:
    """``registry keys create``; returns the key's secret."""
    secret: str = json.loads(keys_command(database_url, "create", "--name", name, "--json", *options).stdout)["secret"]
    return secret


async def add_key(database_url: str, name: str, scopes: list[str], **options: Any) -> str:
    """A key stored directly (in-process tests; ``options`` as ``registry.auth.keys.new_key`` takes them); returns
    its secret."""
    from registry.auth.keys import new_key
    from registry.store.database import Database
    from registry.store.keys import KeyStore

    record, secret = new_key(name, scopes, **options)
    database = Database(database_url, connections=2)
    await database.open()
    try:
        await KeyStore(database).add(record)
    finally:
        await database.close()
    return secret
