"""A real Oxigraph server (the ``oxigraph`` command of the PyPI package ``oxigraph``) as an external SPARQL store."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from typing import Any

import httpx

from tests.support.servers import free_port


class OxigraphServer:
    """``oxigraph serve`` on loopback, its data in a directory of its own (kept across restarts)."""

    def __init__(self, *, union_default_graph: bool = True) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.location = tempfile.mkdtemp(prefix="registry-oxigraph-")
        self.union_default_graph = union_default_graph
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        """The registry settings that make it the directory's SPARQL store."""
        return {
            "REGISTRY_SPARQL_STORE_QUERY_URL": f"{self.url}/query",
            "REGISTRY_SPARQL_STORE_UPDATE_URL": f"{self.url}/update",
            "REGISTRY_SPARQL_STORE_GRAPH_URL": f"{self.url}/store",
        }

    def start(self) -> OxigraphServer:
        command = ["oxigraph", "serve", "--location", self.location, "--bind", f"127.0.0.1:{self.port}"]
        if self.union_default_graph:
            command.append("--union-default-graph")
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(f"{self.url}/query", data={"query": "ASK {}"}, timeout=1)
                return self
            time.sleep(0.05)
        raise RuntimeError("oxigraph serve did not answer within 10 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.location, ignore_errors=True)

    def update(self, operations: str) -> None:
        httpx.post(
            f"{self.url}/update", content=operations, headers={"Content-Type": "application/sparql-update"}
        ).raise_for_status()

    def select(self, query: str) -> list[dict[str, Any]]:
        """Bindings of a query asked of the store itself (not through the directory)."""
        answer = httpx.post(
            f"{self.url}/query", data={"query": query}, headers={"Accept": "application/sparql-results+json"}
        )
        answer.raise_for_status()
        rows: list[dict[str, Any]] = answer.json()["results"]["bindings"]
        return rows

    def graphs(self) -> set[str]:
        return {row["g"]["value"] for row in self.select("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")}
