"""bench/regress.py: a run of the benchmark suite against the run recorded before it. A figure regressed when its
new range is wholly worse than the recorded one; ratios against the interleaved reference come first, then p50 for
latencies; what one run lacks is said, and so are different interpreters and machines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import regress
from bench.regress import IMPROVED, NOT_BEFORE, NOT_NOW, REGRESSED, WITHIN, Series, judge

MACHINE = {
    "cores": 2,
    "processor": "AMD EPYC",
    "python": "3.11.2",
    "executable": "/usr/bin/python3.11",
    "build": "PGO not declared, LTO not declared",
    "speed ms": 15.0,
}


def get_phase(ratios: list[float], rates: list[float] | None = None) -> dict[str, Any]:
    return {
        "name": "GET /things/{id}",
        "clients": 32,
        "req/s": rates or [20_000.0 * ratio for ratio in ratios],
        "p50 ms": [1.2] * len(ratios),
        "p99 ms": [2.5] * len(ratios),
        "ratio": {"against": "floor: Litestar, cached bytes", "values": ratios},
        "judged by": "ratio",
    }


def latency_phase(p50s: list[float]) -> dict[str, Any]:
    return {
        "name": "filtered search",
        "clients": 1,
        "req/s": [1000 / value for value in p50s],
        "p50 ms": p50s,
        "p99 ms": [value * 2 for value in p50s],
        "judged by": "p50",
    }


def entry(*phases: dict[str, Any], size: int = 100_000, **changes: Any) -> dict[str, Any]:
    return {
        "size": size,
        "command": "python bench/suite.py --large",
        "began": "2026-11-28 02:24 UTC",
        "rounds": 3,
        "duration s": 5,
        "logging": "default",
        "machine": dict(MACHINE),
        "load average": {"start": "0.45, 0.90, 0.48", "end": "1.83, 1.43, 0.85"},
        "start-up s": {"restart: API": 2.0, "restart: SPARQL": 10.0},
        "import /s": 2500.0,
        "RSS MB": {"one replica": 700},
        "phases": list(phases),
        **changes,
    }


def row(rows: list[regress.Comparison], start: str) -> regress.Comparison:
    return next(found for found in rows if found.figure.startswith(start))


def test_overlapping_ranges_are_not_a_regression() -> None:
    rows = regress.compare_entries(entry(get_phase([1.0, 1.05, 1.1])), entry(get_phase([0.9, 0.95, 1.01])))
    compared = row(rows, "GET /things/{id} (32 clients): x floor")
    assert (compared.verdict, compared.regressed) == (WITHIN, False)
    assert compared.before == "1.00-1.10x"
    assert compared.now == "0.90-1.01x"


def test_a_wholly_lower_ratio_is_a_regression() -> None:
    rows = regress.compare_entries(entry(get_phase([1.0, 1.05, 1.1])), entry(get_phase([0.85, 0.9, 0.99])))
    compared = row(rows, "GET /things/{id}")
    assert compared.regressed
    assert compared.verdict == REGRESSED


def test_the_ratio_is_judged_rather_than_the_rate() -> None:
    """A slower machine lowers the rate and its floor alike: the ratio held, nothing regressed."""
    before = entry(get_phase([1.0, 1.1], rates=[25_000, 26_000]))
    now = entry(get_phase([1.02, 1.12], rates=[12_000, 13_000]))
    compared = row(regress.compare_entries(before, now), "GET /things/{id}")
    assert not compared.regressed
    assert compared.figure.endswith("x floor: Litestar, cached bytes")


def test_a_wholly_higher_p50_is_a_regression() -> None:
    rows = regress.compare_entries(entry(latency_phase([3.0, 3.2, 3.4])), entry(latency_phase([3.5, 3.6, 4.0])))
    compared = row(rows, "filtered search (1 clients): p50")
    assert compared.regressed
    assert compared.now == "3.5-4.0 ms"


def test_a_wholly_lower_p50_is_an_improvement() -> None:
    rows = regress.compare_entries(entry(latency_phase([3.0, 3.2])), entry(latency_phase([2.0, 2.9])))
    compared = row(rows, "filtered search")
    assert (compared.verdict, compared.regressed) == (IMPROVED, False)


def test_a_phase_missing_before_is_not_measured_before() -> None:
    rows = regress.compare_entries(entry(), entry(get_phase([1.0, 1.1])))
    compared = row(rows, "GET /things/{id}")
    assert (compared.verdict, compared.before, compared.regressed) == (NOT_BEFORE, "-", False)


def test_a_size_missing_before_is_not_measured_before() -> None:
    lines, regressed = regress.report(None, entry(get_phase([1.0, 1.1]), size=100_000))
    assert not regressed
    assert "No run recorded before at 100,000 descriptions" in lines[0]
    table = [line for line in lines if line.startswith("| GET")]
    assert table == [
        f"| GET /things/{{id}} (32 clients): x floor: Litestar, cached bytes | - | 1.00-1.10x | {NOT_BEFORE} |"
    ]
    assert all(
        NOT_BEFORE in line for line in lines if line.startswith("| ") and "figure" not in line and "---" not in line
    )


def test_a_phase_missing_now_is_said() -> None:
    rows = regress.compare_entries(entry(get_phase([1.0]), latency_phase([3.0])), entry(get_phase([1.0])))
    compared = row(rows, "filtered search")
    assert (compared.verdict, compared.now) == (NOT_NOW, "-")


def test_a_ratio_recorded_on_one_side_only_falls_back_to_the_rate_and_says_so() -> None:
    """Without --go-reference PUT new has no ratio: compared by req/s with a run that had one."""
    now = {"name": "PUT new", "clients": 32, "req/s": [1400.0, 1500.0], "p50 ms": [20.0, 21.0], "judged by": "rate"}
    before = {**now, "req/s": [1500.0, 1600.0], "ratio": {"against": "Go reference: PUT new", "values": [1.4, 1.8]}}
    before["judged by"] = "ratio"
    compared = row(regress.compare_entries(entry(before), entry(now)), "PUT new")
    assert compared.figure == "PUT new (32 clients): req/s"
    assert compared.verdict.startswith(WITHIN)
    now_with_ratio = {**before, "ratio": {"against": "Go reference: PUT new", "values": [1.0, 1.1]}}
    compared = row(regress.compare_entries(entry(now), entry(now_with_ratio)), "PUT new")
    assert compared.figure == "PUT new (32 clients): req/s"
    assert "(x Go reference: PUT new not recorded before)" in compared.verdict


def test_a_ratio_recorded_before_and_not_now_is_said() -> None:
    now = {"name": "PUT new", "clients": 32, "req/s": [1400.0, 1500.0], "p50 ms": [20.0, 21.0], "judged by": "rate"}
    before = {**now, "ratio": {"against": "Go reference: PUT new", "values": [1.4, 1.8]}, "judged by": "ratio"}
    compared = row(regress.compare_entries(entry(before), entry(now)), "PUT new")
    assert compared.figure == "PUT new (32 clients): req/s"
    assert compared.verdict == f"{WITHIN} (x Go reference: PUT new not measured now)"


def test_references_are_shown_and_not_judged() -> None:
    floor = {"name": "floor: Litestar, cached bytes", "clients": 32, "req/s": [24_000.0], "judged by": "reference"}
    slower = {**floor, "req/s": [12_000.0]}
    compared = row(regress.compare_entries(entry(floor), entry(slower)), "floor:")
    assert not compared.regressed
    assert compared.verdict.startswith("reference, not judged")


@pytest.mark.parametrize(
    ("before", "now", "higher", "verdict", "regressed"),
    [
        ((2500.0,), (2400.0,), True, WITHIN, False),
        ((2500.0,), (1500.0,), True, REGRESSED, True),
        ((2500.0,), (3500.0,), True, IMPROVED, False),
        ((2.0,), (3.0,), False, REGRESSED, True),
        ((2.0,), (2.2,), False, WITHIN, False),
    ],
)
def test_one_sample_figures_are_judged_by_the_tolerance(
    before: tuple[float, ...], now: tuple[float, ...], higher: bool, verdict: str, regressed: bool
) -> None:
    said, worse = judge(Series(before, "/s", higher), Series(now, "/s", higher), tolerance=0.25)
    assert said.startswith(verdict)
    assert worse is regressed


def test_a_small_move_of_a_short_start_up_is_not_judged() -> None:
    """0.7 s to 1.0 s is a large share of a short start-up, and within how much it moves between runs."""
    changes: dict[str, Any] = {"start-up s": {"restart: API": 1.0, "restart: SPARQL": 1.3}}
    earlier: dict[str, Any] = {"start-up s": {"restart: API": 0.7, "restart: SPARQL": 1.0}}
    before = entry(**earlier)
    rows = regress.compare_entries(before, entry(**changes))
    compared = row(rows, "restart: API")
    assert not compared.regressed
    assert compared.verdict == f"{WITHIN} (one sample each: 43% worse, within 1 s)"


def test_the_import_rate_and_start_up_are_compared() -> None:
    changes: dict[str, Any] = {"import /s": 1200.0, "start-up s": {"restart: API": 2.1, "restart: SPARQL": 30.0}}
    now = entry(**changes)
    rows = regress.compare_entries(entry(), now)
    assert row(rows, "bulk import").regressed
    assert not row(rows, "restart: API").regressed
    assert row(rows, "restart: SPARQL").regressed
    assert not row(rows, "RSS").regressed


def test_different_interpreters_and_machines_are_named() -> None:
    other = {**MACHINE, "python": "3.11.7", "executable": "/root/.pyenv/versions/3.11.7/bin/python3.11"}
    other |= {"cores": 8, "processor": "Intel Xeon"}
    lines, _ = regress.report(entry(), entry(machine=other))
    said = lines[0]
    assert "Different interpreters: before Python 3.11.2 (/usr/bin/python3.11;" in said
    assert "now Python 3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11;" in said
    assert "Different machines: before 2 cores (AMD EPYC), now 8 cores (Intel Xeon)." in said
    assert "the ratios against the interleaved references are the figures that compare" in said


def test_the_same_interpreter_and_machine_are_said_too() -> None:
    lines, _ = regress.report(entry(), entry())
    assert "Same interpreter: Python 3.11.2" in lines[0]
    assert "Same machine: 2 cores (AMD EPYC)" in lines[0]
    assert "figures that compare" not in lines[0]


def test_the_report_names_what_regressed() -> None:
    lines, regressed = regress.report(entry(latency_phase([3.0, 3.1])), entry(latency_phase([4.0, 4.2])))
    assert regressed
    assert lines[-1] == "Regressed: filtered search (1 clients): p50."
    assert "| filtered search (1 clients): p50 | 3.0-3.1 ms | 4.0-4.2 ms | **regressed** |" in lines


def test_files_keep_the_sizes_a_run_did_not_measure(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    regress.save(path, [entry(size=1000), entry(size=100_000)])
    regress.save(path, [entry(get_phase([1.0]), size=1000)])
    sizes = regress.load(path)
    assert list(sizes) == ["1000", "100000"]
    assert sizes["1000"]["phases"]
    assert json.loads(path.read_text())["sizes"]["100000"]["phases"] == []


def test_compare_files_compares_each_size_of_the_new_file(tmp_path: Path) -> None:
    before, now = tmp_path / "before.json", tmp_path / "now.json"
    regress.save(before, [entry(get_phase([1.0, 1.1]), size=100_000)])
    regress.save(now, [entry(get_phase([0.7, 0.8]), size=100_000), entry(size=1000)])
    lines, regressed = regress.compare_files(before, now)
    assert regressed
    assert "### 1,000 descriptions" in lines
    assert "### 100,000 descriptions" in lines
    assert any(line.startswith("No run recorded before at 1,000") for line in lines)


def test_a_missing_file_has_no_entries(tmp_path: Path) -> None:
    assert regress.load(tmp_path / "absent.json") == {}
