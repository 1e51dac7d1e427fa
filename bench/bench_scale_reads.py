"""Reads of a running directory at scale, one client over HTTP, in interleaved rounds: natural-language needs by
mode, `format=collection` pages with their exact total, SPARQL `LIMIT 50` queries.

    python bench/bench_scale_reads.py --url http://127.0.0.1:PORT [--rounds 5] [--split dev] [--generated]

Each round asks every need of bench/nl_eval of ``--split`` once in each mode (``hybrid``, ``lexical``; the modes'
order alternates between rounds), then ``--requests`` collection pages and SPARQL queries. A first round warms up
and is not counted. Per kind: the median and min-max of the rounds' p50 and p95, the answers that were not 200,
and for needs the retrieval the directory reports it used (``hybrid`` only where vectors answered). Over rows of
bench/catalogue.py's ``generate`` (``--generated``) the SPARQL queries name its capabilities (``capability0``…).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_nl_search import NL_EVAL, percentile, read_needs  # noqa: E402
from bench.catalogue import CAPABILITIES  # noqa: E402
from bench.rounds import alternated, load_average, machine  # noqa: E402

Request = Callable[[random.Random], str]


def say(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {load_average()}] {line}", flush=True)


def kinds(split: str, generated: bool) -> dict[str, list[Request] | Request]:
    """What a round asks: each need once per mode (a list), or a request drawn at random (``--requests`` times)."""
    needs = [need.text for need in read_needs(NL_EVAL / "needs.jsonl", NL_EVAL / "qrels.jsonl") if need.split == split]

    def asked(text: str, mode: str) -> Request:
        return lambda _: f"/api/v1/search?q={quote(text)}&mode={mode}&limit=10"

    def sparql(rng: random.Random) -> str:
        name = f"capability{rng.randrange(300)}" if generated else rng.choice(CAPABILITIES)
        return "/search/sparql?query=" + quote(
            f'SELECT ?thing WHERE {{ ?thing lmos:capabilities/lmos:name "{name}" }} LIMIT 50'
        )

    return {
        "need, hybrid": [asked(text, "hybrid") for text in needs],
        "need, lexical": [asked(text, "lexical") for text in needs],
        "format=collection, first page (limit 50, exact total)": lambda _: "/things?format=collection&limit=50",
        "listing, first page (limit 50)": lambda _: "/things?limit=50",
        "SPARQL capability LIMIT 50": sparql,
    }


def timed(client: httpx.Client, paths: list[str], outcomes: Counter[str]) -> list[float]:
    timings = []
    for path in paths:
        started = time.perf_counter()
        response = client.get(path)
        timings.append((time.perf_counter() - started) * 1000)
        outcome = str(response.status_code)
        if response.status_code == 200 and path.startswith("/api/v1/search"):
            outcome += " " + str(response.json().get("retrieval", "?"))
        outcomes[outcome] += 1
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=40, help="collection pages and SPARQL queries per round")
    parser.add_argument("--split", default="dev", help="which needs of bench/nl_eval (dev or test)")
    parser.add_argument("--generated", action="store_true", help="SPARQL over bench/catalogue.py's generate rows")
    parser.add_argument("--only", help="the kinds whose name contains this text")
    args = parser.parse_args()
    say(machine())
    asked = {name: kind for name, kind in kinds(args.split, args.generated).items() if (args.only or "") in name}
    rng = random.Random(1)
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in asked}
    outcomes: dict[str, Counter[str]] = {name: Counter() for name in asked}
    with httpx.Client(base_url=args.url, timeout=120) as client:
        for number in range(args.rounds + 1):
            for name in alternated(list(asked), number):
                kind = asked[name]
                requests = kind if isinstance(kind, list) else [kind] * args.requests
                timings = timed(client, [request(rng) for request in requests], outcomes[name])
                if number:  # the first round warms up
                    figures[name].append((percentile(timings, 0.5), percentile(timings, 0.95)))
            say(f"round {number}/{args.rounds} done" + (" (warm-up)" if not number else ""))
    say(f"| request ({args.rounds} rounds, one client) | p50 ms (median, min-max of rounds) | p95 ms | answers |")
    say("|---|---:|---:|---|")
    for name, rounds in figures.items():
        p50s, p95s = [p50 for p50, _ in rounds], [p95 for _, p95 in rounds]
        answers = ", ".join(f"{outcome}: {count}" for outcome, count in sorted(outcomes[name].items()))
        say(
            f"| {name} | {statistics.median(p50s):.1f} ({min(p50s):.1f}-{max(p50s):.1f}) | "
            f"{statistics.median(p95s):.1f} ({min(p95s):.1f}-{max(p95s):.1f}) | {answers} |"
        )


if __name__ == "__main__":
    main()
