"""Interleaved rounds for in-process benchmarks on a generated catalogue: each round runs every contender
``requests`` times and keeps its median, rounds alternate between contenders so drifting load touches all alike,
and the summary is the median and spread (min-max) of the round medians, printed with the cores and load."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import statistics
import sys
import sysconfig
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import psutil

from tests.support.servers import fresh_database

Run = Callable[[], Awaitable[None]]
T = TypeVar("T")


async def round_median(run: Run, requests: int) -> float:
    """Median milliseconds of ``requests`` sequential runs."""
    durations = []
    for _ in range(requests):
        started = time.perf_counter()
        await run()
        durations.append(time.perf_counter() - started)
    return statistics.median(durations) * 1000


async def interleaved(title: str, runs: dict[str, Run], rounds: int, requests: int, digits: int = 2) -> None:
    """Measure ``runs`` in alternating rounds and print each one's median and spread under ``title``."""
    medians: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            medians[name].append(await round_median(run, requests))
    print(f"{title} ({rounds} rounds of {requests}):")
    width = max(map(len, medians))
    for name, values in medians.items():
        print(
            f"  {name:{width}} median {statistics.median(values):.{digits}f} ms "
            f"(rounds {min(values):.{digits}f}-{max(values):.{digits}f} ms)"
        )


def print_against(
    header: str, figures: dict[str, list[float]], reference: str, shown: Callable[[list[float]], str]
) -> None:
    """A Markdown table of each contender's rounds (``shown``) and their ratios to ``reference``'s round by round
    (min-max and median); ``header`` names the first two columns."""
    print(f"| {header} | x {reference}, per round | median |")
    print("|---|---:|---:|---:|")
    for name, values in figures.items():
        ratios = [value / base for value, base in zip(values, figures[reference], strict=True)]
        print(f"| {name} | {shown(values)} | {min(ratios):.2f}-{max(ratios):.2f} | {statistics.median(ratios):.2f} |")


def print_probes_against_reference(first: str, figures: dict[str, list[float]]) -> None:
    """A Markdown table of rounds' p50 figures keyed ``"probe | contender"``: each with its range and its ratio to
    the same probe's ``reference`` round by round (median); ``first`` names the probes' column."""
    print(f"| {first} | contender | p50 ms (median of rounds) | rounds min-max | x reference (median of rounds) |")
    print("|---|---|---:|---:|---:|")
    for key, values in figures.items():
        probe = key.partition(" | ")[0]
        ratios = [value / base for value, base in zip(values, figures[f"{probe} | reference"], strict=True)]
        print(
            f"| {key} | {statistics.median(values):.1f} | {min(values):.1f}-{max(values):.1f} "
            f"| {statistics.median(ratios):.3f} |"
        )


def alternated(ways: Sequence[T], round_number: int) -> list[T]:
    """``ways`` in the order of round ``round_number``: reversed every other round, so none always goes first (and
    pays for what the one before it left behind)."""
    return list(ways) if round_number % 2 == 0 else list(ways)[::-1]


def load_average() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def interpreter_speed() -> float:
    """Milliseconds this interpreter takes for 10⁶ additions in a Python loop (best of 3): the server's share of
    every figure moves with it. A CPython built without profile-guided optimisation (pyenv's default build) took
    1.96 s for 10⁷ where Debian's python3.11 took 1.03 s on the same machine."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for number in range(1_000_000):
            total += number
        best = min(best, time.perf_counter() - started)
    return best * 1000


def build_options() -> str:
    """Whether this CPython says it was built with profile-guided optimisation and link-time optimisation, from
    its configure arguments and compiler flags. A distribution's build may apply them without saying so (Debian's
    does PGO in its own build rules): the speed reference beside it is the measure that counts."""
    configured = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    flags = " ".join(str(sysconfig.get_config_var(name) or "") for name in ("PY_CFLAGS", "PY_CFLAGS_NODIST"))
    pgo = "--enable-optimizations" in configured or "-fprofile-use" in flags
    lto = "--with-lto" in configured or "-flto" in flags
    return f"PGO {'yes' if pgo else 'not declared'}, LTO {'yes' if lto else 'not declared'}"


def interpreter() -> str:
    """The interpreter the benchmark and the servers it starts run on: path, version, build, speed reference."""
    path = sys.executable
    real = os.path.realpath(path)
    shown = path if real == path else f"{path} → {real}"
    speed = f"10⁶ additions in {interpreter_speed():.0f} ms"
    return f"Python {platform.python_version()} ({shown}; {build_options()}; {speed})"


def _processor() -> str:
    return next(
        (line.split(":", 1)[1].strip() for line in _cpuinfo().splitlines() if line.startswith("model name")), "?"
    )


def machine() -> str:
    """What the figures depend on besides the code: cores, processor, interpreter (and its speed) and load."""
    return f"cores: {os.cpu_count()} ({_processor()}); {interpreter()}; load average: {load_average()}"


def machine_facts() -> dict[str, str | int | float]:
    """``machine()`` as fields, for a results file: cores, processor, interpreter version, real path and build,
    the speed reference in milliseconds."""
    return {
        "cores": os.cpu_count() or 0,
        "processor": _processor(),
        "python": platform.python_version(),
        "executable": os.path.realpath(sys.executable),
        "build": build_options(),
        "speed ms": round(interpreter_speed(), 1),
    }


#: Logging as ``registry serve`` runs it unless configured otherwise: the access log on, at information level.
DEFAULT_LOGGING = {"REGISTRY_LOG_LEVEL": "info", "REGISTRY_ACCESS_LOG": "true"}
#: The opt-out of --quiet-log: warnings only, no access log.
QUIET_LOGGING = {"REGISTRY_LOG_LEVEL": "warning", "REGISTRY_ACCESS_LOG": "false"}


def server_logging(quiet: bool) -> dict[str, str]:
    """REGISTRY_* variables of a server under test: the defaults unless ``quiet`` (tests/support/servers.py starts
    servers at warning level, which is not what users run)."""
    return dict(QUIET_LOGGING if quiet else DEFAULT_LOGGING)


#: Whether the servers a benchmark starts run --quiet-log (set by ``use_logging_option``).
_quiet_log = False


def add_logging_option(parser: argparse.ArgumentParser) -> None:
    """The opt-out of a benchmark that starts servers: ``--quiet-log``."""
    parser.add_argument(
        "--quiet-log",
        action="store_true",
        help="run the directory at warning level without its access log (not the default configuration)",
    )


def use_logging_option(arguments: argparse.Namespace) -> str:
    """Take ``--quiet-log`` for the servers ``served`` configures; what to print beside the figures."""
    global _quiet_log
    _quiet_log = bool(arguments.quiet_log)
    return logging_said(_quiet_log)


def served(env: dict[str, str] | None = None) -> dict[str, str]:
    """REGISTRY_* variables of a server a benchmark starts: the logging of ``use_logging_option``, then ``env``."""
    return {**server_logging(_quiet_log), **(env or {})}


def logging_said(quiet: bool) -> str:
    """How the servers under test log, for the output beside the figures."""
    if quiet:
        return "logging: --quiet-log (warnings only, access log off; not the default configuration)"
    return "logging: the default configuration (access log on, level info, JSON lines to a file)"


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def main(
    description: str | None,
    measure: Callable[[str, int, int, int], Awaitable[None]],
    *,
    size: int,
    rounds: int,
    requests: int,
) -> None:
    """Command line of such a benchmark: ``measure(url, size, rounds, requests)`` on a fresh database of its own."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=size, help="generated descriptions")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--requests", type=int, default=requests, help="requests per round")
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    arguments = parser.parse_args()
    print(machine())
    with fresh_database(arguments.admin_url) as url:
        asyncio.run(measure(url, arguments.n, arguments.rounds, arguments.requests))
    print(f"load average after: {load_average()}")


def rss_mb(processes: list[psutil.Process]) -> float:
    """Resident memory of ``processes`` in MiB (those that have ended count nothing)."""
    total = 0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            total += process.memory_info().rss
    return total / 2**20
