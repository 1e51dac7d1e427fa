"""Measure needs widened by the gazetteer's purpose lines (registry/discovery/expansion.py) on bench/nl_eval.

    python bench/probe_nl_widening.py --database-url postgresql://postgres@127.0.0.1:5432/postgres
    python bench/probe_nl_widening.py --test       # the test split too (confirm once, after tuning on dev)

The corpus is loaded once (bench/tune_nl_search.py's ``loaded``: embeddings off, the vectors computed here with the
server's texts); every description is a candidate, scored by the server's fusion (``needs.score``) from the server's
full-text rank and the similarities of its parts to the need's vector: not widened, widened with the nearest
``PRODUCTS`` purpose lines at ``WEIGHT`` over a small grid, shifted to the need's own best similarity (as the server
does) or not. Printed per condition and split: nDCG@10, MRR, success@1 and no-answer AUC (hybrid retrieval).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_nl_search import NL_EVAL, read_needs  # noqa: E402
from bench.tune_nl_search import (  # noqa: E402
    admin_url,
    lexical_ranks,
    loaded,
    part_vectors,
    ranked_figures,
    similarities,
)
from registry.discovery import expansion  # noqa: E402
from registry.discovery import needs as fusion  # noqa: E402
from tests.support.servers import fresh_database  # noqa: E402

#: (purpose lines, weight) of the grid; the shipped constants are among them.
GRID = ((3, 0.5), (3, 0.75), (3, 1.0), (5, 0.5), (5, 0.75), (5, 1.0), (8, 0.5), (8, 0.75), (8, 1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", help="admin URL of a PostgreSQL (default: embedded)")
    parser.add_argument("--test", action="store_true", help="the test split too")
    args = parser.parse_args()
    needs = read_needs(NL_EVAL / "needs.jsonl", NL_EVAL / "qrels.jsonl")
    with admin_url(args.database_url) as admin, fresh_database(admin) as database_url:
        summaries = asyncio.run(loaded(database_url))
        lexical = asyncio.run(lexical_ranks(database_url, needs))
    vectors = part_vectors(summaries)
    splits = ("dev", "test") if args.test else ("dev",)
    shipped = (expansion.PRODUCTS, expansion.WEIGHT)
    conditions = [("not widened", None, False, True)]
    conditions += [(f"{k} lines, weight {w}, shifted", (k, w), True, True) for k, w in GRID]
    conditions += [(f"{shipped[0]} lines, weight {shipped[1]}, not shifted", shipped, True, False)]
    for name, grid, widening, shifted in conditions:
        if grid is not None:
            expansion.PRODUCTS, expansion.WEIGHT = grid
        near = {need.need_id: similarities(need, vectors, widening, shifted) for need in needs}
        for split in splits:
            chosen = [need for need in needs if need.split == split]
            shown = ranked_figures(chosen, summaries, lexical, near, fusion.HYBRID)
            print(f"{name:<36} {split:<4} {shown}", flush=True)
    expansion.PRODUCTS, expansion.WEIGHT = shipped


if __name__ == "__main__":
    main()
