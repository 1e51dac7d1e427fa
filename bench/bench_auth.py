"""What authentication costs a read: GET /things/{id} through the whole ASGI application, in-process, per mode.

    python bench/bench_auth.py [--requests 2000] [--rounds 5]

Modes, each its own application on one fresh database (the seed WeatherAgent stored once):
``off`` (no guard installed), ``writes`` with an anonymous read (the guard runs, no credential), ``writes`` with an
API key (one indexed lookup of the key per request) and ``all`` with an API key. Rounds interleave the modes, so
the load of this shared machine falls on all of them alike; printed: requests/s per mode (median and spread over
the rounds) and the ratio to ``off``, with the core count and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from litestar.testing import AsyncTestClient  # noqa: E402

from registry.app import create_app  # noqa: E402
from registry.auth.keys import new_key  # noqa: E402
from registry.config import Settings  # noqa: E402
from registry.store.database import Database  # noqa: E402
from registry.store.keys import KeyStore  # noqa: E402
from tests.support.servers import fresh_database, postgres_server  # noqa: E402

WEATHER_AGENT = json.loads((REPO_ROOT / "tests" / "fixtures" / "weather-agent.td.json").read_text())
#: (label, REGISTRY_AUTH, send the key)
MODES = (
    ("off", "off", False),
    ("writes, anonymous", "writes", False),
    ("writes, key", "writes", True),
    ("all, key", "all", True),
)


async def add_key(url: str) -> str:
    database = Database(url, connections=2)
    await database.open()
    try:
        record, secret = new_key("bench", ["write"])
        await KeyStore(database).add(record)
    finally:
        await database.close()
    return secret


async def run(url: str, data_dir: Path, requests: int, rounds: int) -> None:
    secret = await add_key(url)
    path = f"/things/{WEATHER_AGENT['id']}"
    rates: dict[str, list[float]] = {label: [] for label, _, _ in MODES}
    clients = {}
    headers = {}
    for label, mode, with_key in MODES:
        settings = Settings(database_url=url, auth=mode, db_pool_size=4, access_log=False, data_dir=data_dir)
        app = create_app(settings)
        headers[label] = {"Authorization": f"Bearer {secret}"} if with_key else {}
        clients[label] = AsyncTestClient(app, base_url="http://127.0.0.1")
        await clients[label].__aenter__()
    seed = clients["writes, key"]
    assert (await seed.put(path, json=WEATHER_AGENT, headers=headers["writes, key"])).status_code in {201, 204}
    try:
        for _ in range(rounds):
            for label, _, _ in MODES:
                client, sent = clients[label], headers[label]
                start = time.perf_counter()
                for _ in range(requests):
                    response = await client.get(path, headers=sent)
                    assert response.status_code == 200, response.text
                rates[label].append(requests / (time.perf_counter() - start))
    finally:
        for client in clients.values():
            await client.__aexit__(None, None, None)
    print(f"os.cpu_count() = {os.cpu_count()}, load average {os.getloadavg()}; {rounds} rounds x {requests} GETs")
    reference = statistics.median(rates["off"])
    for label, values in rates.items():
        median = statistics.median(values)
        print(
            f"{label:<18} {median:8.0f} req/s  (min {min(values):.0f}, max {max(values):.0f})"
            f"  ratio to off {median / reference:.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with postgres_server() as admin, fresh_database(admin) as url, tempfile.TemporaryDirectory() as data_dir:
        asyncio.run(run(url, Path(data_dir), args.requests, args.rounds))


if __name__ == "__main__":
    main()
