"""The semantic layer through HTTP: PUT (validation + RDF + store), GET, and SPARQL on a real server process.

    python bench/bench_semantic_http.py --n 2000

Starts PostgreSQL (the local one on 127.0.0.1:5432, else an embedded one), a fresh database and one
``registry serve``; registers --n variants of the seed WeatherAgent one by one and times each request.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.servers import ServerProcess, fresh_database, postgres_server

SEED = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "weather-agent.td.json"
CAPABILITY = (
    "SELECT ?agent WHERE { ?agent a lmos:Agent ; lmos:metadata/lmos:vendor/lmos:name 'Vendor 10' ; "
    "td:hasActionAffordance/td:hasInputSchema/jsonschema:properties/jsonschema:propertyName 'question' }"
)


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    seed = json.loads(SEED.read_text())
    print(f"cores: {os.cpu_count()}  descriptions: {args.n}")
    with (
        postgres_server() as admin,
        fresh_database(admin) as url,
        ServerProcess(url) as server,
        httpx.Client(base_url=server.base_url, timeout=60) as http,
    ):
        puts = []
        for number in range(args.n):
            document = {**seed, "id": f"urn:uuid:bench-{number:08d}"}
            document["lmos:metadata"] = {"lmos:vendor": {"lmos:name": f"Vendor {number % 20}"}}
            if number % 10:
                document["actions"] = {
                    "getWeather": {
                        **seed["actions"]["getWeather"],
                        "input": {"type": "object", "properties": {f"question{number % 7}": {"type": "string"}}},
                    }
                }
            started = time.perf_counter()
            response = http.put(f"/things/{document['id']}", json=document)
            puts.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 201, response.text
        gets = []
        for number in range(0, args.n, max(1, args.n // 200)):
            started = time.perf_counter()
            assert http.get(f"/things/urn:uuid:bench-{number:08d}").status_code == 200
            gets.append((time.perf_counter() - started) * 1000)
        queries = []
        for _ in range(50):
            started = time.perf_counter()
            response = http.get("/search/sparql", params={"query": CAPABILITY})
            queries.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.text
        found = len(response.json()["results"]["bindings"])
    for name, samples in (("PUT /things/{id}", puts), ("GET /things/{id}", gets), ("SPARQL capability", queries)):
        print(
            f"{name}: p50 {statistics.median(samples):.2f} ms, p95 {percentile(samples, 0.95):.2f} ms "
            f"({len(samples)} requests)"
        )
    print(f"capability query found {found} agents")


if __name__ == "__main__":
    main()
