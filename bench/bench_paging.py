"""Listing pages deep in a generated catalogue: pages by key (the ``after`` a next link carries) against pages by
``offset``, and this tree against a reference commit, in one run.

    python bench/bench_paging.py [--n 100000] [--reference main] [--rounds 5] [--requests 20] [--limit 50]

A fresh database on the local PostgreSQL holds ``--n`` generated descriptions (bench/catalogue.py, written by SQL
in seconds per 10⁵). Two `registry serve` processes read it: this tree ("candidate") and ``--reference`` (a commit,
unpacked with `git archive` and run from there), each in its default configuration but for its port, data
directory, the database and ``REGISTRY_EMBEDDINGS=off`` (two servers would otherwise both embed the generated
rows, which loads the machine and is not what a listing does). One client, over HTTP, sequential requests; rounds
alternate the contenders (reversed every other round), each round keeps its median of ``--requests``, the summary
is the median of the rounds with their spread. Pages of ``--limit``:

- first page: ``/things?limit=L``;
- a middle page (offset n/2) and a deep page (offset n - 2L): by ``offset`` alone (what the reference's next links
  carry, and what a client computing offsets asks for) on both, and by the next link the candidate hands out
  (``offset`` and ``after``, the previous page's last id) on the candidate.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock
from urllib.parse import urlencode

import httpx
from sqlalchemy import text

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.catalogue import generate  # noqa: E402
from bench.rounds import alternated, load_average, machine, print_probes_against_reference  # noqa: E402
from registry.store import database as database_module  # noqa: E402
from registry.store.database import Database  # noqa: E402
from tests.support.servers import free_port, fresh_database  # noqa: E402


def log(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load_average()}] {line}", flush=True)


@contextlib.contextmanager
def unpacked(reference: str) -> Iterator[Path]:
    """The tree of commit ``reference`` in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="bench-paging-ref-") as directory:
        archive = Path(directory) / "tree.tar"
        subprocess.run(["git", "archive", "-o", str(archive), reference], cwd=REPO_ROOT, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(Path(directory) / "tree", filter="data")
        yield Path(directory) / "tree"


@contextlib.contextmanager
def serving(tree: Path, database_url: str) -> Iterator[str]:
    """`registry serve` run from ``tree`` (its ``registry`` package comes first on the path) on ``database_url``."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="bench-paging-data-") as data_dir:
        environment = {name: value for name, value in os.environ.items() if not name.startswith("REGISTRY_")}
        environment |= {
            "REGISTRY_DATABASE_URL": database_url,
            "REGISTRY_DATA_DIR": data_dir,
            "REGISTRY_PORT": str(port),
            "REGISTRY_EMBEDDINGS": "off",
            "PYTHONPATH": str(tree),
        }
        command = [sys.executable, "-m", "registry", "serve", "--no-migrate"]
        with (Path(data_dir) / "serve.log").open("ab") as output:
            process = subprocess.Popen(command, cwd=tree, env=environment, stdout=output, stderr=output)
        base_url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"registry serve from {tree} exited: {(Path(data_dir) / 'serve.log').read_text()}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(base_url + "/things?limit=1", timeout=5).status_code == 200:
                        break
                time.sleep(0.1)
            yield base_url
        finally:
            process.terminate()
            process.wait(60)


async def fill(url: str, size: int) -> dict[int, str]:
    """``size`` generated descriptions; the id at each position the probes start past."""
    with mock.patch.object(database_module, "COMMAND_TIMEOUT", 1800):
        database = Database(url, connections=2)
        await database.open()
        try:
            await generate(database, size)
            ids = {}
            for position in positions(size).values():
                query = text("SELECT id FROM descriptions ORDER BY id OFFSET :skip LIMIT 1")
                ids[position] = await database.fetchval(query, skip=position - 1)
            return ids
        finally:
            await database.close()


def positions(size: int, limit: int = 50) -> dict[str, int]:
    return {"middle": size // 2, "deep": size - 2 * limit}


async def median_ms(client: httpx.AsyncClient, path: str, requests: int, expected: int) -> float:
    durations = []
    for _ in range(requests):
        started = time.perf_counter()
        response = await client.get(path)
        durations.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text
        assert len(response.json()) == expected, path
    return statistics.median(durations) * 1000


async def measure(
    urls: dict[str, str], probes: dict[str, dict[str, str]], rounds: int, requests: int, limit: int
) -> dict[str, list[float]]:
    """Round medians of each (probe, contender) pair."""
    figures: dict[str, list[float]] = {}
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=60))
            for name, url in urls.items()
        }
        for name, client in clients.items():  # warm both alike: connections, plans, the pages' buffers
            for probe in probes.values():
                if name in probe:
                    await median_ms(client, probe[name], 3, limit)
        for round_number in range(rounds):
            for probe_name, probe in probes.items():
                for name in alternated(list(probe), round_number):
                    key = f"{probe_name} | {name}"
                    figures.setdefault(key, []).append(await median_ms(clients[name], probe[name], requests, limit))
            log(f"round {round_number + 1} of {rounds} done")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="generated descriptions")
    parser.add_argument("--reference", default="main", help="commit to measure against")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20, help="requests per round and probe")
    parser.add_argument("--limit", type=int, default=50, help="page size")
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    arguments = parser.parse_args()
    size, limit = arguments.n, arguments.limit
    print(machine())
    log(f"reference {arguments.reference}; {size:,} descriptions; pages of {limit}")
    with fresh_database(arguments.admin_url) as url, unpacked(arguments.reference) as reference_tree:
        started = time.monotonic()
        after = asyncio.run(fill(url, size))
        log(f"generated in {time.monotonic() - started:.0f} s")
        first = f"/things?limit={limit}"
        probes: dict[str, dict[str, str]] = {"first page": {"reference": first, "candidate": first}}
        for name, position in positions(size, limit).items():
            by_offset = f"/things?offset={position}&limit={limit}"
            by_key = "/things?" + urlencode({"offset": position, "limit": limit, "after": after[position]})
            probes[f"{name} page (offset {position:,})"] = {
                "reference": by_offset,
                "candidate": by_offset,
                "candidate, next link": by_key,
            }
        # The two offset probes of the candidate are named apart from its next-link probe.
        with serving(REPO_ROOT, url) as candidate, serving(reference_tree, url) as reference:
            urls = {"reference": reference, "candidate": candidate, "candidate, next link": candidate}
            figures = asyncio.run(measure(urls, probes, arguments.rounds, arguments.requests, limit))
    print(f"\n{size:,} descriptions, pages of {limit}, {arguments.rounds} rounds of {arguments.requests} requests")
    print_probes_against_reference("page", figures)
    log("done")


if __name__ == "__main__":
    main()
