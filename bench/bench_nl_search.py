"""Natural-language discovery: how well ``GET /api/v1/search`` answers needs stated in plain words.

    python bench/bench_nl_search.py                        # registry serve, default configuration, embedded PostgreSQL
    python bench/bench_nl_search.py --database-url postgresql://postgres@127.0.0.1:5432/nl_eval
    python bench/bench_nl_search.py --url http://127.0.0.1:8080   # a running server (the corpus is loaded into it)
    python bench/bench_nl_search.py --check                # check needs, qrels and corpus only, no server
    python bench/bench_nl_search.py --json results.json --repeat 3

The evaluation set is bench/nl_eval/ (README.md there: corpus, needs, judgments, procedure). The corpus goes in
through the public APIs, as publishers send it: ``PUT /things/{id}`` for Thing Descriptions, ``POST
/api/v1/agents/import?format=a2a&id=…`` for A2A Agent Cards, ``POST /v0.1/publish`` for MCP ``server.json``.
Then every need is asked as ``GET /api/v1/search?q=<need>&limit=10&mode=<mode>`` for each mode (lexical, semantic,
hybrid); a server that refuses ``mode`` (400 naming it) is asked plain ``q`` instead and the mode is reported as
"current default". Two baselines are always run on today's parameters: the need as ``q`` as it is, and its words
joined by `` or ``. Needs are asked need by need, every run in turn (alternating order), so drifting load on the
machine touches all runs alike.

Reported per run and split (dev, test, all): nDCG@10 (graded, gain = grade, log2 discount), MRR@10 and success@1
(first hit of grade 2 or more), recall@10 (of the items graded 2 or more) over the needs that have an answer, and
the no-answer AUC: the ROC AUC over all needs of the top hit's ``score`` as a predictor of "this need has an
answer" (grade 2 or more exists); a run whose items carry no ``score`` is ranked by 1/(1 + rank) instead, and the
table says so. Latency is the client's wall time of each search over HTTP (p50, p95).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.rounds import alternated, load_average, machine  # noqa: E402
from tests.support.servers import free_port  # noqa: E402

NL_EVAL = REPO_ROOT / "bench" / "nl_eval"
MODES = ("lexical", "semantic", "hybrid")
SPLITS = ("dev", "test", "all")
LIMIT = 10
#: Grade from which an item answers a need (2: does it among other things; 3: exactly what is needed).
ANSWERS = 2
MAX_GRADE = 3
TD_SUFFIX, CARD_SUFFIX, SERVER_SUFFIX = ".td.json", ".agent-card.json", ".server.json"
A2A_ID_PREFIX = "urn:nl-eval:a2a:"
MCP_ID_PREFIX = "urn:mcp:server:"
LOAD_CONCURRENCY = 8
QUERY_BASELINE, OR_BASELINE = "baseline: q as is", "baseline: words joined by or"


# -- the evaluation set


@dataclass(frozen=True)
class Item:
    """One corpus file and the directory id it gets once loaded."""

    path: Path
    kind: str  # td, a2a or mcp
    thing_id: str
    document: dict[str, Any]


@dataclass(frozen=True)
class Need:
    need_id: str
    text: str
    split: str
    #: Directory id -> grade (0-3) of every judged item.
    grades: dict[str, int]
    #: paraphrase, specific, broad, constraint or none (README.md).
    kind: str = ""

    @property
    def answerable(self) -> bool:
        return any(grade >= ANSWERS for grade in self.grades.values())


def item_of(path: Path) -> Item:
    """The corpus item in ``path``: its kind by the file suffix, its id as the directory assigns it."""
    document = json.loads(path.read_text(encoding="utf-8"))
    name = path.name
    if name.endswith(TD_SUFFIX):
        return Item(path, "td", str(document["id"]), document)
    if name.endswith(CARD_SUFFIX):
        return Item(path, "a2a", A2A_ID_PREFIX + name.removesuffix(CARD_SUFFIX), document)
    if name.endswith(SERVER_SUFFIX):
        return Item(path, "mcp", MCP_ID_PREFIX + str(document["name"]), document)
    raise ValueError(f"{path}: not a *{TD_SUFFIX}, *{CARD_SUFFIX} or *{SERVER_SUFFIX} file")


def read_corpus(directory: Path) -> list[Item]:
    return [item_of(path) for path in sorted(directory.rglob("*.json"))]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_needs(needs_path: Path, qrels_path: Path) -> list[Need]:
    grades: dict[str, dict[str, int]] = {}
    for row in read_jsonl(qrels_path):
        grades.setdefault(row["need_id"], {})[row["id"]] = int(row["grade"])
    return [
        Need(row["id"], row["text"], row["split"], grades.get(row["id"], {}), row.get("type", ""))
        for row in read_jsonl(needs_path)
    ]


def repeated(values: Sequence[str]) -> list[str]:
    return sorted(value for value, count in Counter(values).items() if count > 1)


def problems_of(items: Sequence[Item], needs: Sequence[Need], qrels_path: Path) -> list[str]:
    """Every inconsistency between corpus, needs and judgments (empty when the set is usable)."""
    problems: list[str] = []
    ids = [item.thing_id for item in items]
    problems += [f"corpus: id {thing_id} is given to two files" for thing_id in repeated(ids)]
    need_ids = [need.need_id for need in needs]
    problems += [f"needs: {need_id} appears twice" for need_id in repeated(need_ids)]
    problems += [f"needs: {need.need_id} has split {need.split!r}" for need in needs if need.split not in SPLITS[:2]]
    known_ids, known_needs = set(ids), set(need_ids)
    for number, row in enumerate(read_jsonl(qrels_path), start=1):
        where = f"qrels line {number}"
        if row.get("need_id") not in known_needs:
            problems.append(f"{where}: unknown need {row.get('need_id')!r}")
        if row.get("id") not in known_ids:
            problems.append(f"{where}: no corpus item has id {row.get('id')!r}")
        if row.get("grade") not in range(MAX_GRADE + 1):
            problems.append(f"{where}: grade {row.get('grade')!r} is not 0-{MAX_GRADE}")
    return problems


# -- the server


@contextlib.contextmanager
def served(database_url: str | None, timeout: float) -> Iterator[str]:
    """A ``registry serve`` in its default configuration (no REGISTRY_* setting but port and data directory, and
    the database URL when given) on a free loopback port; its base URL. Its data directory is temporary."""
    data_dir = tempfile.mkdtemp(prefix="nl-eval-data-")
    port = free_port()
    env = {name: value for name, value in os.environ.items() if not name.startswith("REGISTRY_")}
    command = [sys.executable, "-m", "registry", "serve", "--port", str(port), "--data-dir", data_dir]
    if database_url:
        command += ["--database-url", database_url]
    log = Path(data_dir, "serve.log")
    with log.open("wb") as output:
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base_url, process, timeout, log)
        yield base_url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


def wait_ready(base_url: str, process: subprocess.Popen[bytes], timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"registry serve exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(base_url + "/readyz", timeout=2).status_code == 200:
                return
        time.sleep(0.25)
    raise RuntimeError(f"registry serve was not ready within {timeout} s:\n{log.read_text(errors='replace')}")


# -- loading the corpus


@dataclass(frozen=True)
class Loaded:
    item: Item
    status: int
    #: The id the directory gave the item: the one it answered with (A2A import) or the one the API defines (a TD's
    #: own id; ``urn:mcp:server:{name}`` for a published server.json).
    thing_id: str = ""
    detail: str = ""

    @property
    def ok(self) -> bool:
        published = self.status < 300 or (self.item.kind == "mcp" and "already published" in self.detail)
        return published and self.thing_id == self.item.thing_id


async def load_item(client: httpx.AsyncClient, item: Item) -> Loaded:
    """Register ``item`` the way its publisher would (a second run replaces, or finds the version published)."""
    if item.kind == "td":
        answer = await client.put(
            "/things/" + quote(item.thing_id, safe=":@"),
            content=json.dumps(item.document),
            headers={"Content-Type": "application/td+json"},
        )
    elif item.kind == "a2a":
        answer = await client.post(
            "/api/v1/agents/import", params={"format": "a2a", "id": item.thing_id}, json=item.document
        )
    else:
        answer = await client.post("/v0.1/publish", json=item.document)
    if answer.status_code >= 300:
        return Loaded(item, answer.status_code, item.thing_id, answer.text[:500])
    given = str(answer.json().get("id", "")) if item.kind == "a2a" else item.thing_id
    mismatch = (
        "" if given == item.thing_id else f"the directory gave the id {given!r}, the judgments use {item.thing_id!r}"
    )
    return Loaded(item, answer.status_code, given, mismatch)


async def load_corpus(client: httpx.AsyncClient, items: Sequence[Item]) -> list[Loaded]:
    gate = asyncio.Semaphore(LOAD_CONCURRENCY)

    async def one(item: Item) -> Loaded:
        async with gate:
            return await load_item(client, item)

    return list(await asyncio.gather(*(one(item) for item in items)))


# -- asking


@dataclass(frozen=True)
class Answer:
    status: int
    milliseconds: float
    #: (id, score) of the items answered, best first; score None when the item carries none.
    hits: list[tuple[str, float | None]] = field(default_factory=list)
    detail: str = ""


@dataclass
class Run:
    label: str
    #: The query for a need's text.
    query: Callable[[str], str]
    mode: str | None
    answers: list[Answer] = field(default_factory=list)
    #: ``match`` sent with each query (the baselines ask for the strict syntax where the server knows ``match``).
    match: str | None = None
    #: Milliseconds of the later passes (--repeat), by need id.
    timings: dict[str, list[float]] = field(default_factory=dict)
    #: The mode this run stands in for when the server refused ``mode`` (answers are the plain query's).
    stands_for: str | None = None


def or_query(text: str) -> str:
    """The need's words joined by `` or ``: each word stripped of the punctuation around it (so that none reads as a
    web-search operator such as ``-word`` or a quote), and the word "or" itself left out."""
    words = [word.strip(".,;:!?\"'()[]{}-") for word in text.split()]
    return " or ".join(word for word in words if word and word.lower() != "or")


def as_is(text: str) -> str:
    return text


async def ask(client: httpx.AsyncClient, text: str, mode: str | None, match: str | None = None) -> Answer:
    params = {"q": text, "limit": str(LIMIT)}
    if mode is not None:
        params["mode"] = mode
    if match is not None:
        params["match"] = match
    started = time.perf_counter()
    response = await client.get("/api/v1/search", params=params)
    milliseconds = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        return Answer(response.status_code, milliseconds, detail=response.text[:500])
    hits = [(str(item["id"]), score_of(item)) for item in response.json().get("items", [])]
    return Answer(200, milliseconds, hits)


def score_of(item: dict[str, Any]) -> float | None:
    score = item.get("score")
    return float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None


def refuses_mode(answer: Answer) -> bool:
    """Whether the server answered 400 because it does not know the ``mode`` parameter."""
    return answer.status == 400 and "mode" in answer.detail


async def probe_modes(client: httpx.AsyncClient, text: str, modes: Sequence[str]) -> dict[str, bool]:
    """Which modes the server accepts, from one search each."""
    return {mode: not refuses_mode(await ask(client, text, mode)) for mode in modes}


async def probe_match(client: httpx.AsyncClient, text: str) -> bool:
    """Whether the server knows ``match`` (the strict all-words syntax as ``match=all``)."""
    answer = await ask(client, text, None, "all")
    return not (answer.status == 400 and "match" in answer.detail)


def plan_runs(supported: dict[str, bool], strict: bool = False) -> tuple[list[Run], list[Run]]:
    """The runs to ask (baselines and supported modes) and the mode rows that stand for the plain query; ``strict``:
    the baselines ask with ``match=all`` (the syntax of the search before needs in plain words)."""
    match = "all" if strict else None
    plain = Run(QUERY_BASELINE, as_is, None, match=match)
    asked = [plain, Run(OR_BASELINE, or_query, None, match=match)]
    standing_in: list[Run] = []
    for mode, accepted in supported.items():
        if accepted:
            asked.append(Run(mode, as_is, mode))
        else:
            standing_in.append(Run(f"{mode} (current default)", as_is, None, stands_for=mode))
    return asked, standing_in


async def ask_all(client: httpx.AsyncClient, needs: Sequence[Need], runs: Sequence[Run], repeat: int) -> None:
    """Ask every need in every run, need by need, the runs' order alternating; passes after the first only time."""
    for warm_up in needs[:3]:
        for run in runs:
            await ask(client, run.query(warm_up.text), run.mode, run.match)
    for number in range(repeat):
        for index, need in enumerate(needs):
            for run in alternated(runs, index + number):
                answer = await ask(client, run.query(need.text), run.mode, run.match)
                if number == 0:
                    run.answers.append(answer)
                else:
                    run.timings.setdefault(need.need_id, []).append(answer.milliseconds)


# -- measures


def dcg(grades: Sequence[int]) -> float:
    return sum(grade / math.log2(rank + 2) for rank, grade in enumerate(grades))


def ndcg(need: Need, hits: Sequence[str]) -> float:
    ideal = dcg(sorted(need.grades.values(), reverse=True)[:LIMIT])
    return dcg([need.grades.get(hit, 0) for hit in hits[:LIMIT]]) / ideal if ideal else 0.0


def reciprocal_rank(need: Need, hits: Sequence[str]) -> float:
    for rank, hit in enumerate(hits[:LIMIT], start=1):
        if need.grades.get(hit, 0) >= ANSWERS:
            return 1 / rank
    return 0.0


def recall(need: Need, hits: Sequence[str]) -> float:
    relevant = {thing_id for thing_id, grade in need.grades.items() if grade >= ANSWERS}
    return len(relevant & set(hits[:LIMIT])) / len(relevant)


def top_score(answer: Answer, by_rank: bool) -> float:
    """The predictor of "has an answer": the top hit's score (or its rank score); lowest without hits."""
    if not answer.hits:
        return -math.inf
    score = answer.hits[0][1]
    return rank_score(1) if by_rank or score is None else score


def rank_score(rank: int) -> float:
    """The stand-in for a score the server does not send: 1/(1 + rank), rank 1 for the top hit."""
    return 1 / (1 + rank)


def roc_auc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """Probability that a random positive scores above a random negative (ties count half); None without both."""
    if not positives or not negatives:
        return None
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def scored_by_rank(run: Run) -> bool:
    return any(score is None for answer in run.answers for _, score in answer.hits)


def in_split(run: Run, needs: Sequence[Need], split: str) -> list[tuple[Need, Answer]]:
    """The run's answers to the needs of ``split`` (dev, test or all), or of the needs of a type (``type:<kind>``)."""
    return [(need, answer) for need, answer in zip(needs, run.answers, strict=True) if chosen_by(need, split)]


def chosen_by(need: Need, split: str) -> bool:
    return split in ("all", need.split, f"type:{need.kind}")


def measures(run: Run, needs: Sequence[Need], split: str) -> dict[str, Any]:
    chosen = in_split(run, needs, split)
    answerable = [(need, [hit for hit, _ in answer.hits]) for need, answer in chosen if need.answerable]
    by_rank = scored_by_rank(run)

    def mean(values: list[float]) -> float | None:
        return statistics.fmean(values) if values else None

    p50, p95 = latency(run, needs, split)
    return {
        "needs": len(chosen),
        "answerable": len(answerable),
        "ndcg@10": mean([ndcg(need, hits) for need, hits in answerable]),
        "mrr@10": mean([reciprocal_rank(need, hits) for need, hits in answerable]),
        "success@1": mean([float(reciprocal_rank(need, hits) == 1.0) for need, hits in answerable]),
        "recall@10": mean([recall(need, hits) for need, hits in answerable]),
        "no_answer_auc": roc_auc(
            [top_score(answer, by_rank) for need, answer in chosen if need.answerable],
            [top_score(answer, by_rank) for need, answer in chosen if not need.answerable],
        ),
        "refused": sum(answer.status != 200 for _, answer in chosen),
        "p50_ms": p50,
        "p95_ms": p95,
    }


# -- reporting


def shown(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def table(runs: Sequence[Run], needs: Sequence[Need]) -> list[str]:
    lines = [
        "| run | split | needs (answerable) | nDCG@10 | MRR@10 | success@1 | recall@10 | no-answer AUC | refused "
        "| p50 ms | p95 ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        for split in SPLITS:
            figures = measures(run, needs, split)
            auc = shown(figures["no_answer_auc"]) + (" (rank)" if scored_by_rank(run) else "")
            lines.append(
                f"| {run.label} | {split} | {figures['needs']} ({figures['answerable']}) | {shown(figures['ndcg@10'])} "
                f"| {shown(figures['mrr@10'])} | {shown(figures['success@1'])} | {shown(figures['recall@10'])} "
                f"| {auc} | {figures['refused']} | {shown(figures['p50_ms'], 1)} | {shown(figures['p95_ms'], 1)} |"
            )
    return lines


def latency(run: Run, needs: Sequence[Need], split: str) -> tuple[float | None, float | None]:
    """p50 and p95 of the run's searches for the needs of ``split``, every pass (a mode row standing in for the plain
    query shows the plain query's, since its searches are those)."""
    chosen = in_split(run, needs, split)
    timings = [answer.milliseconds for _, answer in chosen]
    timings += [ms for need, _ in chosen for ms in run.timings.get(need.need_id, [])]
    return (percentile(timings, 0.5), percentile(timings, 0.95)) if timings else (None, None)


def details(run: Run, needs: Sequence[Need]) -> list[dict[str, Any]]:
    return [
        {
            "need": need.need_id,
            "status": answer.status,
            "ms": round(answer.milliseconds, 2),
            "hits": [[hit, score, need.grades.get(hit, 0)] for hit, score in answer.hits],
            **({"detail": answer.detail} if answer.detail else {}),
        }
        for need, answer in zip(needs, run.answers, strict=True)
    ]


def results(runs: Sequence[Run], needs: Sequence[Need], context: dict[str, Any]) -> dict[str, Any]:
    return {
        **context,
        "needs_by_type": dict(Counter(need.kind for need in needs)),
        "runs": {
            run.label: {
                "mode": run.mode or run.stands_for,
                "mode_accepted": run.stands_for is None and run.mode is not None,
                "score_source": "rank" if scored_by_rank(run) else "score",
                "splits": {split: measures(run, needs, split) for split in SPLITS},
                "by_type": {kind: measures(run, needs, f"type:{kind}") for kind in sorted({n.kind for n in needs})},
                "needs": details(run, needs),
            }
            for run in runs
        },
    }


# -- the command


async def load(client: httpx.AsyncClient, items: Sequence[Item]) -> dict[str, str]:
    """Load the corpus; the id each file got (relative path -> id). Any refusal ends the run: the judgments assume
    every item is in the directory under the id they name."""
    started = time.monotonic()
    loaded = await load_corpus(client, items)
    failed = [entry for entry in loaded if not entry.ok]
    print(f"loaded {len(loaded) - len(failed)} of {len(items)} descriptions in {time.monotonic() - started:.1f} s")
    for entry in failed:
        print(f"  {shown_path(entry.item.path)}: {entry.status} {entry.detail}")
    if failed:
        raise SystemExit(f"{len(failed)} corpus items were refused or got another id")
    return {shown_path(entry.item.path): entry.thing_id for entry in loaded}


async def embedded(client: httpx.AsyncClient, count: int, within: float = 600) -> None:
    """Wait until the server's vectors cover the corpus (its ``embeddings`` readiness check at ``count of count``);
    a server without that check, or answering lexically (no pgvector, embeddings off), is not waited for."""
    started = deadline = time.monotonic()
    deadline += within
    while time.monotonic() < deadline:
        check = (await client.get("/readyz")).json().get("checks", {}).get("embeddings")
        detail = str((check or {}).get("detail", ""))
        if check is None or detail.startswith("lexical only") or detail.startswith(f"{count} of "):
            waited = time.monotonic() - started
            print(f"embeddings: {detail or 'no such check'} (waited {waited:.1f} s)", flush=True)
            return
        await asyncio.sleep(0.5)
    raise SystemExit(f"the server's vectors did not cover the corpus within {within:g} s")


def shown_path(path: Path) -> str:
    """``path`` relative to the repository when it is in it."""
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


async def evaluate(
    base_url: str, items: Sequence[Item], needs: Sequence[Need], repeat: int
) -> tuple[list[Run], dict[str, str]]:
    """The runs in report order (the two baselines, then one per mode) and the id each corpus file got."""
    limits = httpx.Limits(max_connections=LOAD_CONCURRENCY)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as client:
        ids = await load(client, items)
        await embedded(client, len(items))
        supported = await probe_modes(client, needs[0].text, MODES)
        accepted = {True: "accepted", False: "refused (400)"}
        print("modes: " + ", ".join(f"{mode} {accepted[ok]}" for mode, ok in supported.items()))
        asked, standing_in = plan_runs(supported, await probe_match(client, needs[0].text))
        await ask_all(client, needs, asked, repeat)
    for run in standing_in:
        run.answers, run.timings = asked[0].answers, asked[0].timings
    by_mode = {run.mode: run for run in asked if run.mode is not None}
    modes = [by_mode.get(mode) or next(run for run in standing_in if run.stands_for == mode) for mode in MODES]
    return [*asked[:2], *modes], ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--url", help="a running registry (default: start registry serve)")
    target.add_argument("--database-url", help="PostgreSQL for the started server (default: embedded)")
    parser.add_argument("--set", type=Path, default=NL_EVAL, help="the evaluation set (default bench/nl_eval)")
    parser.add_argument("--repeat", type=int, default=1, help="passes over the needs (later ones only time)")
    parser.add_argument("--json", type=Path, help="write the figures and every answer here")
    parser.add_argument("--check", action="store_true", help="check the evaluation set and exit")
    parser.add_argument("--timeout", type=float, default=180, help="seconds the started server may take to be ready")
    args = parser.parse_args()
    items = read_corpus(args.set / "corpus")
    needs = read_needs(args.set / "needs.jsonl", args.set / "qrels.jsonl")
    problems = problems_of(items, needs, args.set / "qrels.jsonl")
    answerable = sum(need.answerable for need in needs)
    print(f"{len(items)} descriptions, {len(needs)} needs ({answerable} with an answer), {len(problems)} problems")
    for problem in problems:
        print(f"  {problem}")
    if problems or args.check:
        raise SystemExit(1 if problems else 0)
    measured_on = machine()
    print(measured_on, flush=True)
    with contextlib.ExitStack() as stack:
        base_url = args.url or stack.enter_context(served(args.database_url, args.timeout))
        database = "PostgreSQL at --database-url" if args.database_url else "embedded PostgreSQL"
        server = args.url or f"registry serve, default configuration, {database}"
        runs, ids = asyncio.run(evaluate(base_url, items, needs, max(1, args.repeat)))
    print(f"\nserver: {server}; searches: {len(needs)} needs x {max(1, args.repeat)} passes per run, limit {LIMIT}")
    print("\n".join(table(runs, needs)))
    print(f"\nload average after: {load_average()}")
    if args.json:
        context = {
            "machine": measured_on,
            "python": {"executable": sys.executable, "version": platform.python_version()},
            "cores": os.cpu_count(),
            "server": server,
            "set": str(args.set),
            "corpus": len(items),
            "repeat": max(1, args.repeat),
            "ids": ids,
        }
        args.json.write_text(json.dumps(results(runs, needs, context), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
