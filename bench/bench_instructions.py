"""Instructions per request through the whole ASGI application, counted by valgrind: a figure the load of a shared
machine cannot move, for comparing two versions of the code (regressions on the hot paths).

    python bench/bench_instructions.py                          # this checkout
    python bench/bench_instructions.py --reference ../other     # this checkout and another one, interleaved
    python bench/bench_instructions.py --kinds get --logging info warning off   # what the access log costs

Each checkout's application is driven in-process (no HTTP parsing, no network), on a fresh database migrated by
that checkout: N GET /things/{id} of the seed WeatherAgent, and N PUT /things/{id} of new ids (validation, RDF and
catalog projections). Start-up is taken out by running each measurement at two lengths and dividing the
difference. Needs valgrind (apt-get install valgrind); about a minute per checkout.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.rounds import machine  # noqa: E402
from tests.support.servers import fresh_database, postgres_server  # noqa: E402

#: Runs inside the checkout being measured (its ``registry`` package first on sys.path).
DRIVER = r"""
import asyncio, json, os, sys, uuid
sys.path.insert(0, os.getcwd())
from registry.config import Settings
from registry.ops.logs import configure_logging
import registry.app as application

URL, KIND, N = os.environ["BENCH_URL"], os.environ["BENCH_KIND"], int(os.environ["BENCH_N"])
LOGGING = os.environ.get("BENCH_LOGGING", "info")
TD = json.loads(open(os.environ["BENCH_TD"]).read())
FIXED_ID = TD["id"]

async def main():
    # Logging as ``registry serve`` sets it up (JSON lines, an access line per request), into /dev/null; or at
    # warning level, or without the access log.
    sys.stderr = open(os.devnull, "w")
    configure_logging("warning" if LOGGING == "warning" else "info", "json")
    # The access log's writer wakes on a timer of wall time, which valgrind stretches many times over: left as it is,
    # its idle wake-ups would be counted per request, more of them the busier the machine. It wakes once an hour
    # here, and the lines are written when the application shuts down (in batches, as a busy server's are).
    import registry.ops.logs as logs
    writer = getattr(logs, "access_writer", None) or getattr(logs, "_access_lines", None)
    if writer is not None:
        writer.interval = 3600.0
    settings = Settings(database_url=URL, access_log=LOGGING != "off")
    create = getattr(application, "create_asgi_app", None) or application.create_app
    app = create(settings)
    lifespan_in, lifespan_out = asyncio.Queue(), asyncio.Queue()
    await lifespan_in.put({"type": "lifespan.startup"})
    lifespan = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                                       lifespan_in.get, lifespan_out.put))
    await lifespan_out.get()
    statuses = set()

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.add(message["status"])

    async def request(method, thing_id, body=b""):
        path = "/things/" + thing_id
        headers = [(b"host", b"127.0.0.1")]
        if body:
            headers += [(b"content-type", b"application/td+json"), (b"content-length", str(len(body)).encode())]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
                 "headers": headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8080)}

        async def receive():
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, receive, send)

    await request("PUT", FIXED_ID, json.dumps(TD).encode())
    statuses.clear()
    for _ in range(N):
        if KIND == "get":
            await request("GET", FIXED_ID)
        else:
            thing_id = f"urn:uuid:{uuid.uuid4()}"
            await request("PUT", thing_id, json.dumps({**TD, "id": thing_id}).encode())
    assert statuses <= {200, 201}, statuses
    await lifespan_in.put({"type": "lifespan.shutdown"})
    await lifespan

asyncio.run(main())
"""

COUNTS = {"get": (200, 1200), "put": (20, 120)}
LOGGINGS = ("info", "warning", "off")


def instructions(checkout: Path, database_url: str, kind: str, count: int, driver: Path, logging: str) -> int:
    environment = {
        **os.environ,
        "BENCH_LOGGING": logging,
        "BENCH_URL": database_url,
        "BENCH_KIND": kind,
        "BENCH_N": str(count),
        "BENCH_TD": str(REPO_ROOT / "tests" / "fixtures" / "weather-agent.td.json"),
    }
    finished = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, str(driver)],
        cwd=checkout,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : ([\d,]+)", finished.stderr)
    if found is None:
        raise RuntimeError(f"valgrind reported no instruction count:\n{finished.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def migrate(checkout: Path, database_url: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "registry", "migrate"],
        cwd=checkout,
        env={**os.environ, "REGISTRY_DATABASE_URL": database_url},
        check=True,
        capture_output=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=Path, help="another checkout to measure, interleaved with this one")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per checkout (counts barely vary)")
    parser.add_argument("--kinds", nargs="+", choices=list(COUNTS), default=list(COUNTS), help="requests to count")
    parser.add_argument(
        "--logging",
        nargs="+",
        choices=LOGGINGS,
        default=["info"],
        help="info: as `registry serve` by default (an access line per request); warning: no access line; "
        "off: no access log middleware (REGISTRY_ACCESS_LOG=false)",
    )
    args = parser.parse_args()
    checkouts = {"this": REPO_ROOT}
    if args.reference is not None:
        checkouts["reference"] = args.reference.resolve()
    print(f"{machine()} (instruction counts do not depend on the load)")
    with tempfile.TemporaryDirectory() as scratch, postgres_server() as admin_url:
        driver = Path(scratch) / "driver.py"
        driver.write_text(DRIVER)
        for round_number in range(1, args.rounds + 1):
            for name, checkout in checkouts.items():
                for kind, logging in itertools.product(args.kinds, args.logging):
                    short, long = COUNTS[kind]
                    with fresh_database(admin_url, migrate=False) as url:
                        migrate(checkout, url)
                        low = instructions(checkout, url, kind, short, driver, logging)
                        high = instructions(checkout, url, kind, long, driver, logging)
                    per_request = (high - low) / (long - short)
                    print(
                        f"round {round_number} {name:9} {kind.upper():3} log {logging:7} "
                        f"{per_request / 1000:9,.0f}k instructions",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
