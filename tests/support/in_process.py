"""The in-process test client, as a local client reaches the directory."""

from __future__ import annotations

from typing import Any

from litestar import Litestar
from litestar.testing import AsyncTestClient

#: The directory answers only to its own names (REGISTRY_ALLOWED_HOSTS): the test client's default host,
#: testserver.local, is not one of them.
LOCAL_BASE_URL = "http://127.0.0.1:8080"


def local_client(app: Litestar, **options: Any) -> AsyncTestClient[Litestar]:
    """``AsyncTestClient`` of ``app`` sending ``Host: 127.0.0.1:8080``."""
    return AsyncTestClient(app=app, base_url=LOCAL_BASE_URL, **options)
