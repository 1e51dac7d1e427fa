"""Slowloris against ``registry serve`` (uvicorn with the hardened protocol), plain uvicorn and, if installed,
granian, interleaved in rounds on the same database.

ATTACK connections from 127.0.0.2 send a request line and then one header line a second; a legitimate client on
127.0.0.1 opens a fresh connection every 0.2 s. Printed per server and round: legitimate requests that succeeded
and failed, their latency, and the attack connections the server still held open at the end.

    python -m bench.bench_slowloris [ATTACK] [SECONDS] [ROUNDS] [--quiet-log]
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time

import httpx

from bench.rounds import logging_said, machine, server_logging
from tests.support.servers import LOCAL_POSTGRES, free_port, fresh_database

HEADER_TIMEOUT = 5


def _wait_up(base: str) -> None:
    for _ in range(600):
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(base + "/.well-known/wot", timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise SystemExit(f"{base} did not start")


def _attack(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        with contextlib.suppress(OSError):
            sock = socket.create_connection(("127.0.0.1", port), timeout=2, source_address=("127.0.0.2", 0))
            sock.sendall(b"GET /.well-known/wot HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            sockets.append(sock)
    return sockets


def _still_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        data = sock.recv(65536)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return not (data == b"" or data.startswith((b"HTTP/1.1 4", b"HTTP/1.1 5")))


def run(label: str, command: list[str], env: dict[str, str], attack: int, seconds: float) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [part.replace("{port}", str(port)) for part in command],
        env={**os.environ, **env, "REGISTRY_PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_up(base)
        sockets = _attack(port, attack)
        ok = failed = 0
        latencies: list[float] = []
        deadline = time.monotonic() + seconds
        trickled = 0.0
        while time.monotonic() < deadline:
            if time.monotonic() - trickled > 1:
                for sock in sockets:
                    with contextlib.suppress(OSError):
                        sock.sendall(b"X-Slow: 1\r\n")
                trickled = time.monotonic()
            sent = time.monotonic()
            try:
                status = httpx.get(base + "/.well-known/wot", timeout=5).status_code
            except httpx.HTTPError:
                status = 0
            latencies.append(time.monotonic() - sent)
            ok, failed = (ok + 1, failed) if status == 200 else (ok, failed + 1)
            time.sleep(0.2)
        still_open = sum(_still_open(sock) for sock in sockets)
        for sock in sockets:
            sock.close()
        latencies.sort()
        print(
            f"{label:<34} legitimate ok {ok:3d} failed {failed:3d}, p50 {latencies[len(latencies) // 2] * 1000:5.0f} "
            f"ms, max {latencies[-1] * 1000:5.0f} ms; attack connections {len(sockets)}, still open after "
            f"{seconds:g} s: {still_open}",
            flush=True,
        )
    finally:
        process.terminate()
        process.wait(30)


def main() -> None:
    quiet_log = "--quiet-log" in sys.argv  # warnings only, no access log: not the default configuration
    positional = [argument for argument in sys.argv[1:] if argument != "--quiet-log"]
    attack = int(positional[0]) if positional else 1000
    seconds = float(positional[1]) if len(positional) > 1 else 15
    rounds = int(positional[2]) if len(positional) > 2 else 2
    print(f"{machine()}; {logging_said(quiet_log)}; {attack} slow connections, {seconds:g} s")
    python = sys.executable
    factory = "registry.cli.serve:serving_app"
    servers = [
        ("registry serve (hardened uvicorn)", [python, "-m", "registry", "serve"], {}),
        (
            "plain uvicorn",
            [python, "-m", "uvicorn", "--factory", factory, "--port", "{port}", "--loop", "uvloop", "--http=httptools"],
            {},
        ),
    ]
    granian = shutil.which("granian", path=os.path.dirname(python))
    if granian:
        servers.append(
            (
                "granian",
                [
                    granian,
                    "--interface",
                    "asgi",
                    "--factory",
                    "--port",
                    "{port}",
                    "--http1-header-read-timeout",
                    str(HEADER_TIMEOUT * 1000),
                    factory,
                ],
                {},
            )
        )
    with fresh_database(LOCAL_POSTGRES) as url:
        env = {
            "REGISTRY_DATABASE_URL": url,
            "REGISTRY_MIGRATE_ON_START": "false",
            **server_logging(quiet_log),
            "REGISTRY_DB_POOL_SIZE": "4",
            "REGISTRY_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
            "REGISTRY_MAX_CONNECTIONS_PER_CLIENT": "50",
        }
        for _ in range(rounds):
            for label, command, extra in servers:
                run(label, command, {**env, **extra}, attack, seconds)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
