"""The Go reference directory of issue 15 (LinkSmart thing-directory), run beside the directory in a benchmark.

It is not built here: pass the path of a ``thing-directory`` binary you built from
https://github.com/linksmart/thing-directory (its repository vendors its Go modules, so ``go build`` needs no
network). docs/performance.md says which version the published figures used. It runs as issue 15 measured it:
schema validation off (``validation.jsonSchemas`` empty), leveldb storage in a fresh temporary directory,
DNS-SD, the service catalog and authentication off.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from tests.support.servers import free_port


class GoReference:
    """One ``thing-directory`` process on a fixed loopback port; ``restart`` gives a fresh (empty) one."""

    def __init__(self, binary: str | Path, port: int | None = None) -> None:
        self.binary = Path(binary).resolve()
        if not self.binary.is_file():
            raise FileNotFoundError(f"no thing-directory binary at {self.binary}")
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._directory = Path(tempfile.mkdtemp(prefix="bench-go-reference-"))
        self._process: subprocess.Popen[bytes] | None = None
        self.process: psutil.Process | None = None

    def version(self) -> str:
        """What ``-version`` prints: set only by ``go build -ldflags "-X main.Version=…"`` (docs/performance.md)."""
        printed = subprocess.run([self.binary, "-version"], capture_output=True, text=True, check=False).stdout
        return printed.strip() or "without a version string"

    def restart(self, timeout: float = 30) -> None:
        """Stop it, wipe its storage, and start it again: freshly started, as issue 15 compares."""
        self.stop()
        data = self._directory / "data"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        configuration = self._directory / "thing-directory.json"
        configuration.write_text(
            json.dumps(
                {
                    "validation": {"jsonSchemas": []},
                    "storage": {"type": "leveldb", "dsn": str(data)},
                    "dnssd": {"publish": {"enabled": False}},
                    "serviceCatalog": None,
                    "http": {
                        "publicEndpoint": self.url,
                        "bindAddr": "127.0.0.1",
                        "bindPort": self.port,
                        "tls": {"enabled": False},
                        "auth": {"enabled": False},
                    },
                }
            )
        )
        with (self._directory / "log").open("ab") as log:
            self._process = subprocess.Popen(
                [self.binary, "-conf", str(configuration)], cwd=self._directory, stdout=log, stderr=subprocess.STDOUT
            )
        self.process = psutil.Process(self._process.pid)
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"thing-directory exited with {self._process.returncode}: {self.log()[-2000:]}")
            try:
                if httpx.get(self.url + "/things", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"thing-directory did not answer within {timeout:g} s: {self.log()[-2000:]}")
            time.sleep(0.1)

    def log(self) -> str:
        path = self._directory / "log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._directory, ignore_errors=True)
