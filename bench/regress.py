"""Whether a run of bench/suite.py kept the figures of the run recorded before it.

Each run records its raw figures per size in a JSON file (bench/results/suite.json): per-round req/s, p50 and p99
of every phase, the ratio against the reference measured in the same rounds where the phase's target has one, the
import rate, start-up times and RSS, with the command, the interpreter, the machine and the load. Before a size's
entry is replaced, the new figures are compared with it. A figure regressed when its new range is wholly worse
than the recorded one (for a rate: the new best below the old worst), that is when it moved by more than the
rounds' spread; ranges that overlap are not a regression. Each phase is judged by its most robust measure that both
runs recorded: the ratio against its interleaved reference (a slower machine or a busier hour moves both sides of
it), else p50 for a latency, else req/s. The references themselves are shown for context and not judged. A figure
measured once per run (import rate, start-up, RSS) has no spread: it regressed when worse by more than a stated
relative tolerance.

Only the standard library: the comparison runs without a database or a server (``--compare-only``, the tests).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: One size's entry of a results file, as JSON.
Entry = dict[str, Any]
#: A phase of an entry: name, clients, per-round "req/s", "p50 ms", "p99 ms", optional "ratio"
#: (``{"against": reference phase, "values": per round}``) and "judged by" ("ratio", "p50", "rate" or "reference").
PhaseRecord = dict[str, Any]

#: How far a figure measured once per run may fall (relative) before it counts as a regression.
SINGLE_SAMPLE_TOLERANCE = 0.25

REGRESSED, IMPROVED, WITHIN = "**regressed**", "improved", "within the spread"
NOT_BEFORE, NOT_NOW = "not measured before", "not measured now"


@dataclass(frozen=True)
class Series:
    """Values of one figure (per round, or a single sample) and which way is better."""

    values: tuple[float, ...]
    unit: str
    higher_is_better: bool
    digits: int = 0

    def shown(self) -> str:
        if not self.values:
            return "-"
        low, high = (f"{value:,.{self.digits}f}" for value in (min(self.values), max(self.values)))
        text = low if low == high else f"{low}-{high}"
        return f"{text}{self.unit}" if self.unit in ("x", "/s") else f"{text} {self.unit}"


@dataclass(frozen=True)
class Comparison:
    """One row of the comparison: the figure, its range before and now, the verdict, and whether it regressed."""

    figure: str
    before: str
    now: str
    verdict: str
    regressed: bool = False


def _oriented(series: Series) -> list[float]:
    """The values with higher always better."""
    return list(series.values) if series.higher_is_better else [-value for value in series.values]


def _one_sample(before: Series, now: Series, tolerance: float, slack: float) -> tuple[str, bool]:
    old, new = before.values[0], now.values[0]
    if old == new or old == 0:
        return f"{WITHIN} (one sample each)", False
    change = (new - old) / abs(old) * (1 if before.higher_is_better else -1)
    if change < -tolerance and abs(new - old) > slack:
        return f"{REGRESSED} (one sample each: {-change:.0%} worse, more than {tolerance:.0%})", True
    if change > tolerance:
        return f"{IMPROVED} (one sample each: {change:.0%} better)", False
    word = "worse" if change < 0 else "better"
    within = f"within {slack:g} {now.unit}" if change < -tolerance else f"within {tolerance:.0%}"
    return f"{WITHIN} (one sample each: {abs(change):.0%} {word}, {within})", False


def judge(
    before: Series, now: Series, tolerance: float = SINGLE_SAMPLE_TOLERANCE, slack: float = 0.0
) -> tuple[str, bool]:
    """The verdict on ``now`` against ``before`` and whether it is a regression: the new range wholly worse than
    the old (best below worst), or, with one sample on each side, worse by more than ``tolerance`` (relative) and
    by more than ``slack`` (absolute, in the figure's unit: a start-up of a second moves by tenths between runs)."""
    if not before.values:
        return NOT_BEFORE, False
    if not now.values:
        return NOT_NOW, False
    if len(before.values) == 1 and len(now.values) == 1:
        return _one_sample(before, now, tolerance, slack)
    old, new = _oriented(before), _oriented(now)
    if max(new) < min(old):
        return REGRESSED, True
    if min(new) > max(old):
        return IMPROVED, False
    return WITHIN, False


# -- the measures of a phase


def phase_key(phase: PhaseRecord) -> str:
    return f"{phase['name']} ({phase['clients']} clients)"


def measures(phase: PhaseRecord) -> dict[str, Series]:
    """Every measure a phase recorded, most robust first (the one it is judged by leads)."""
    found: dict[str, Series] = {}
    ratio = phase.get("ratio")
    if ratio:
        found[f"x {ratio['against']}"] = Series(tuple(ratio["values"]), "x", True, 2)
    p50 = Series(tuple(phase.get("p50 ms", ())), "ms", False, 1)
    rate = Series(tuple(phase.get("req/s", ())), "/s", True)
    if phase.get("judged by") == "p50":
        found["p50"] = p50
        found["req/s"] = rate
    else:
        found["req/s"] = rate
        found["p50"] = p50
    return found


def compare_phase(before: PhaseRecord | None, now: PhaseRecord) -> Comparison:
    """``now`` against ``before`` by the first of ``now``'s measures that ``before`` recorded too."""
    key = phase_key(now)
    ours = measures(now)
    first_name, first = next(iter(ours.items()))
    if before is None:
        return Comparison(f"{key}: {first_name}", "-", first.shown(), NOT_BEFORE)
    theirs = measures(before)
    name = next((candidate for candidate in ours if candidate in theirs), first_name)
    old, new = theirs.get(name, Series((), first.unit, first.higher_is_better)), ours[name]
    verdict, regressed = judge(old, new)
    if now.get("judged by") == "reference":
        return Comparison(f"{key}: {name}", old.shown(), new.shown(), f"reference, not judged ({verdict})")
    if name != first_name:
        verdict += f" ({first_name} not recorded before)"
    theirs_first = next(iter(theirs))
    if theirs_first not in ours:
        verdict += f" ({theirs_first} not measured now)"
    return Comparison(f"{key}: {name}", old.shown(), new.shown(), verdict, regressed)


def _single(entry: Entry | None, path: tuple[str, ...]) -> tuple[float, ...]:
    value: Any = entry
    for step in path:
        if not isinstance(value, Mapping) or step not in value:
            return ()
        value = value[step]
    return (float(value),) if isinstance(value, int | float) else ()


#: Figures measured once per run: name, path in the entry, unit, higher is better, digits, and the absolute change
#: below which a move is not judged (start-up times are read to a tenth of a second and move by tenths).
SINGLES: tuple[tuple[str, tuple[str, ...], str, bool, int, float], ...] = (
    ("bulk import", ("import /s",), "/s", True, 0, 0.0),
    ("restart: API answers", ("start-up s", "restart: API"), "s", False, 1, 1.0),
    ("restart: SPARQL ready", ("start-up s", "restart: SPARQL"), "s", False, 1, 1.0),
    ("RSS of one replica (server + SPARQL worker)", ("RSS MB", "one replica"), "MB", False, 0, 0.0),
)


def compare_singles(before: Entry | None, now: Entry, tolerance: float) -> list[Comparison]:
    rows = []
    for name, path, unit, higher, digits, slack in SINGLES:
        old = Series(_single(before, path), unit, higher, digits)
        new = Series(_single(now, path), unit, higher, digits)
        verdict, regressed = judge(old, new, tolerance, slack)
        rows.append(Comparison(name, old.shown(), new.shown(), verdict, regressed))
    return rows


def compare_entries(before: Entry | None, now: Entry, tolerance: float = SINGLE_SAMPLE_TOLERANCE) -> list[Comparison]:
    """Every figure of ``now`` (one size's entry) against ``before`` (the recorded entry of that size, if any),
    then the phases ``before`` had that ``now`` lacks."""
    old_phases = {phase_key(phase): phase for phase in (before or {}).get("phases", [])}
    rows = compare_singles(before, now, tolerance)
    new_keys = set()
    for phase in now.get("phases", []):
        new_keys.add(phase_key(phase))
        rows.append(compare_phase(old_phases.get(phase_key(phase)), phase))
    for key, phase in old_phases.items():
        if key not in new_keys:
            name, series = next(iter(measures(phase).items()))
            rows.append(Comparison(f"{key}: {name}", series.shown(), "-", NOT_NOW))
    return rows


# -- what the two runs ran on


def _interpreter(facts: Mapping[str, Any]) -> str:
    return f"Python {facts.get('python', '?')} ({facts.get('executable', '?')}; {facts.get('build', '?')})"


def _machine(facts: Mapping[str, Any]) -> str:
    return f"{facts.get('cores', '?')} cores ({facts.get('processor', '?')})"


def conditions(before: Entry, now: Entry) -> list[str]:
    """Sentences on what differs between the runs besides the code: interpreter, machine, logging, rounds, and the
    speed reference and load of each."""
    old, new = before.get("machine", {}), now.get("machine", {})
    said = []
    if _interpreter(old) != _interpreter(new):
        said.append(f"Different interpreters: before {_interpreter(old)}, now {_interpreter(new)}.")
    else:
        said.append(f"Same interpreter: {_interpreter(new)}.")
    if _machine(old) != _machine(new):
        said.append(f"Different machines: before {_machine(old)}, now {_machine(new)}.")
    else:
        said.append(f"Same machine: {_machine(new)}.")
    if _interpreter(old) != _interpreter(new) or _machine(old) != _machine(new):
        said.append(
            "Rates, latencies and one-sample figures move with the interpreter and the machine: "
            "the ratios against the interleaved references are the figures that compare."
        )
    if before.get("logging") != now.get("logging"):
        said.append(f"Different logging: before {before.get('logging')}; now {now.get('logging')}.")
    if (before.get("rounds"), before.get("duration s")) != (now.get("rounds"), now.get("duration s")):
        said.append(
            f"Different rounds: before {before.get('rounds')} of {before.get('duration s')} s, "
            f"now {now.get('rounds')} of {now.get('duration s')} s."
        )
    said.append(
        f"Speed reference (10⁶ additions): before {old.get('speed ms', '?')} ms, now {new.get('speed ms', '?')} ms; "
        f"load average at the start: before {before.get('load average', {}).get('start', '?')}, "
        f"now {now.get('load average', {}).get('start', '?')}."
    )
    return said


def report(before: Entry | None, now: Entry, tolerance: float = SINGLE_SAMPLE_TOLERANCE) -> tuple[list[str], bool]:
    """Markdown lines of the comparison of one size, and whether any figure regressed."""
    size = f"{now.get('size', 0):,}"
    if before is None:
        lines = [f"No run recorded before at {size} descriptions: every figure is not measured before.", ""]
    else:
        lines = [
            f"Compared with the run recorded before at {size} descriptions (`{before.get('command', '?')}`, "
            f"started {before.get('began', '?')}): a figure regressed when its range is wholly worse than before "
            "(a move larger than the rounds' spread); one-sample figures when worse by more than "
            f"{tolerance:.0%} (start-up times also by more than a second). " + " ".join(conditions(before, now)),
            "",
        ]
    rows = compare_entries(before, now, tolerance)
    lines += ["| figure | before | now | verdict |", "|---|---|---|---|"]
    lines += [f"| {row.figure} | {row.before} | {row.now} | {row.verdict} |" for row in rows]
    regressed = [row.figure for row in rows if row.regressed]
    lines += ["", f"Regressed: {', '.join(regressed)}." if regressed else "Regressed: none."]
    return lines, bool(regressed)


# -- the file


def load(path: Path) -> dict[str, Entry]:
    """The entries of a results file by size (as a string, JSON's keys); none when the file does not exist."""
    if not path.exists():
        return {}
    sizes: dict[str, Entry] = json.loads(path.read_text())["sizes"]
    return sizes


def save(path: Path, entries: Iterable[Entry]) -> None:
    """Replace the entries of these sizes in ``path``, keeping the others."""
    sizes = load(path)
    for entry in entries:
        sizes[str(entry["size"])] = entry
    ordered = {key: sizes[key] for key in sorted(sizes, key=int)}
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"about": "raw figures of bench/suite.py, one entry per size (bench/regress.py)", "sizes": ordered}
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")


def compare_files(before: Path, now: Path, tolerance: float = SINGLE_SAMPLE_TOLERANCE) -> tuple[list[str], bool]:
    """The comparison of every size of ``now`` with the same size of ``before``."""
    old, new = load(before), load(now)
    lines: list[str] = []
    regressed = False
    for size, entry in new.items():
        lines += [f"### {int(size):,} descriptions", ""]
        said, worse = report(old.get(size), entry, tolerance)
        lines += [*said, ""]
        regressed |= worse
    return lines, regressed
