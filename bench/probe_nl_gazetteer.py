"""Measure the product gazetteer (registry/descriptions/gazetteer.py) on both splits of bench/nl_eval.

    python bench/probe_nl_gazetteer.py                 # embedded PostgreSQL in a temporary directory
    python bench/probe_nl_gazetteer.py --database-url postgresql://postgres@127.0.0.1:5432/postgres

Conditions, each with the server's texts, full-text SQL and fusion (``needs.score``, its constants as shipped):

- ``off``: no purpose words (the texts as before the gazetteer);
- ``vectors``: purpose words in the descriptions' vectors only;
- ``vectors+text``: and in the full text, at the lowest weight (D), as the server indexes them;
- ``text``: in the full text only;
- ``vectors+text, brief's examples out``: as ``vectors+text`` with the three products that the task's brief named as
  known misses (Strava, FRED, Globalping) taken out of the list, to show what the rest of the list does.

The corpus is loaded once per full-text condition (embeddings off: the vectors are computed here, as
bench/tune_nl_search.py does). Printed per condition, retrieval and split: nDCG@10, MRR, success@1 and no-answer
AUC; and the cost: the time to find the purposes of a description, and the corpus's texts embedded per second
without and with them (a need's text is embedded as before: the purposes are the descriptions').
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_nl_search import NL_EVAL, Need, read_needs  # noqa: E402
from bench.tune_nl_search import admin_url, lexical_ranks, loaded, ranked_figures  # noqa: E402
from registry.descriptions import gazetteer as products  # noqa: E402
from registry.descriptions import summary as summaries_module  # noqa: E402
from registry.discovery import needs as fusion  # noqa: E402
from registry.discovery.constraints import read_constraints  # noqa: E402
from registry.embeddings import indexer  # noqa: E402
from registry.embeddings.wordllama import embed_blocking  # noqa: E402
from tests.support.servers import fresh_database  # noqa: E402

#: Products the brief named as needs the model misses: left out in the last condition.
BRIEF_EXAMPLES = ("strava", "fred", "globalping")
#: Rounds of the embedding rate's measurement.
ROUNDS = 5
Near = dict[str, dict[str, list[tuple[int, float]]]]


def without(names: Sequence[str]) -> products.Gazetteer:
    """The shipped gazetteer without the products of ``names``."""
    lines = products.DATA.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if line.startswith("#") or line.partition(":")[0].lstrip("~") not in names]
    free, guarded = products.parse(kept)
    return products.Gazetteer(free, guarded, "ablation")


@contextlib.contextmanager
def condition(vectors: bool, text: bool, table: products.Gazetteer | None = None) -> Iterator[None]:
    """The gazetteer on or off for the vectors' texts and the full text (the module functions patched)."""
    saved = (indexer.summary_purposes, summaries_module.purposes, products.gazetteer)
    if not vectors:
        indexer.summary_purposes = lambda summary: ""
    if not text:
        summaries_module.purposes = lambda *names: ""
    if table is not None:
        products.gazetteer = lambda: table  # type: ignore[assignment]
    try:
        yield
    finally:
        indexer.summary_purposes, summaries_module.purposes, products.gazetteer = saved  # type: ignore[assignment]


def cost(summaries: dict[str, dict[str, Any]], rounds: int = ROUNDS) -> None:
    """The corpus's texts embedded per second without and with the purposes (median of ``rounds``, alternated),
    and their mean length in characters."""
    rates: dict[bool, list[float]] = {False: [], True: []}
    lengths = {}
    for _ in range(rounds):
        for on in (False, True):
            with condition(vectors=on, text=False):
                flat = [text for summary in summaries.values() for _, text in indexer.texts_of(summary)]
            lengths[on] = statistics.fmean(map(len, flat))
            started = time.perf_counter()
            embed_blocking(flat)
            rates[on].append(len(flat) / (time.perf_counter() - started))
    for on in (False, True):
        shown = f"{statistics.median(rates[on]):.0f}/s, {lengths[on]:.0f} characters a text"
        print(f"corpus texts embedded {'with' if on else 'without'} the purposes: {shown}")


def near_of(summaries: dict[str, dict[str, Any]], needs: Sequence[Need]) -> Near:
    """Every need's similarities to every description's parts."""
    parts = {thing_id: indexer.texts_of(summary) for thing_id, summary in summaries.items()}
    vectors = embed_blocking([text for texts in parts.values() for _, text in texts])
    wanted = embed_blocking([read_constraints(need.text).text or need.text for need in needs])
    near: Near = {}
    for need, vector in zip(needs, wanted, strict=True):
        scored, start = {}, 0
        for thing_id, texts in parts.items():
            own = vectors[start : start + len(texts)]
            start += len(texts)
            pairs = [
                (part, sum(a * b for a, b in zip(v, vector, strict=True)))
                for (part, _), v in zip(texts, own, strict=True)
            ]
            scored[thing_id] = sorted(pairs, key=lambda item: -item[1])
        near[need.need_id] = scored
    return near


def report(
    name: str,
    needs: Sequence[Need],
    summaries: dict[str, dict[str, Any]],
    lexical: dict[str, dict[str, float]],
    near: Near,
) -> None:
    for retrieval in (fusion.LEXICAL, fusion.SEMANTIC, fusion.HYBRID):
        for split in ("dev", "test"):
            chosen = [need for need in needs if need.split == split]
            shown = ranked_figures(chosen, summaries, lexical, near, retrieval)
            print(f"{name:<40} {retrieval:<8} {split:<4} {shown}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", help="admin URL of a PostgreSQL (default: embedded)")
    args = parser.parse_args()
    needs = read_needs(NL_EVAL / "needs.jsonl", NL_EVAL / "qrels.jsonl")
    ablated = without(BRIEF_EXAMPLES)
    loads: dict[str, tuple[dict[str, dict[str, Any]], dict[str, dict[str, float]]]] = {}
    with admin_url(args.database_url) as admin:
        for key, text, table in (("off", False, None), ("on", True, None), ("ablated", True, ablated)):
            with condition(vectors=False, text=text, table=table), fresh_database(admin) as database_url:
                summaries = asyncio.run(loaded(database_url))
                loads[key] = summaries, asyncio.run(lexical_ranks(database_url, needs))
    summaries = loads["off"][0]
    embed_blocking(["a warm-up: the model loads on first use"])
    started = time.perf_counter()
    named = sum(bool(products.summary_purposes(summary)) for summary in summaries.values())
    per = (time.perf_counter() - started) / len(summaries) * 1e6
    print(f"gazetteer: {len(products.gazetteer())} products; {named} of {len(summaries)} name one", end="")
    print(f"; the purposes of a description found in {per:.0f} µs")
    cost(summaries)
    for name, vectors, text, table in (
        ("off", False, False, None),
        ("vectors", True, False, None),
        ("vectors+text", True, True, None),
        ("text", False, True, None),
        ("vectors+text, brief's examples out", True, True, ablated),
    ):
        with condition(vectors=vectors, text=text, table=table):
            near = near_of(summaries, needs)
        lexical = loads["ablated" if table is not None else "on" if text else "off"][1]
        report(name, needs, summaries, lexical, near)


if __name__ == "__main__":
    main()
