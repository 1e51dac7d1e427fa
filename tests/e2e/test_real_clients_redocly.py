"""Redocly CLI (``@redocly/cli``, its recommended rules) lints the OpenAPI document a live directory serves, with
authentication off (the quickstart) and with API keys and an identity provider's access tokens: no error, no
warning beyond those tests/clients/redocly-lint-ignore.yaml names with the reason."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.identity import ServedJwks
from tests.support.npm_clients import CLIENTS, install_npm_clients, npm_binary
from tests.support.servers import ServerProcess


@pytest.fixture(scope="session")
def npm_clients() -> Path:
    return install_npm_clients()


def lint(npm_clients: Path, base_url: str, work: Path) -> dict[str, Any]:
    (work / "openapi.json").write_bytes(httpx.get(f"{base_url}/schema/openapi.json", timeout=30).content)
    shutil.copy(CLIENTS / "redocly-lint-ignore.yaml", work / ".redocly.lint-ignore.yaml")
    completed = subprocess.run(
        [str(npm_binary(npm_clients, "redocly")), "lint", "openapi.json", "--format=json"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.stdout, completed.stderr[-4000:]
    report: dict[str, Any] = json.loads(completed.stdout)
    return report


def unignored(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (problem["ruleId"], problem["message"], problem["location"][0]["pointer"])
        for problem in report["problems"]
        if not problem.get("ignored")
    ]


def test_redocly_lints_the_quickstart_directorys_document_clean(
    npm_clients: Path, server: ServerProcess, tmp_path: Path
) -> None:
    report = lint(npm_clients, server.base_url, tmp_path)
    assert unignored(report) == []
    assert report["totals"]["errors"] == 0


def test_redocly_lints_the_document_of_a_directory_with_authentication_clean(
    npm_clients: Path, start_server: Callable[..., ServerProcess], jwks: ServedJwks, tmp_path: Path
) -> None:
    server = start_server(
        {
            "REGISTRY_AUTH": "writes",
            "REGISTRY_AUTH_JWKS": jwks.url,
            "REGISTRY_AUTH_JWT_ISSUER": "https://issuer.example.com",
            "REGISTRY_AUTH_JWT_AUDIENCE": "lmos-registry",
        }
    )
    report = lint(npm_clients, server.base_url, tmp_path)
    assert unignored(report) == []
    assert report["totals"]["errors"] == 0
