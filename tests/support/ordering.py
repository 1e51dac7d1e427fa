"""Longest test files first, so that the parallel run (``-n 4 --dist loadfile``) does not end with one worker
running a long file while the others idle.

``tests/durations.json`` holds each file's seconds from a recorded run (``python -m tests.support.ordering LOG``
rewrites it from the output of ``pytest --durations=0``). A file missing from it (a new one) weighs as the median of
its directory. The order within a file is left as written.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import Counter
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parent.parent / "durations.json"
_LINE = re.compile(r"([0-9.]+)s (?:setup|call|teardown)\s+(tests/\S+?\.py)::")


def file_weights() -> dict[str, float]:
    try:
        weights = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return {}
    return {str(name): float(seconds) for name, seconds in weights.items()}


def _directory_medians(weights: dict[str, float]) -> dict[str, float]:
    by_directory: dict[str, list[float]] = {}
    for name, seconds in weights.items():
        by_directory.setdefault(name.rsplit("/", 1)[0], []).append(seconds)
    return {directory: statistics.median(values) for directory, values in by_directory.items()}


def longest_files_first(items: list[pytest.Item], root: Path) -> None:
    """Reorder ``items`` in place: files by recorded duration, longest first; tests of a file stay together and in
    their written order."""
    weights = file_weights()
    medians = _directory_medians(weights)

    def weight(item: pytest.Item) -> float:
        name = Path(item.path).resolve().relative_to(root).as_posix()
        return weights.get(name, medians.get(name.rsplit("/", 1)[0], 0.0))

    position = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (-weight(item), Path(item.path).as_posix(), position[id(item)]))


def record(log: Path) -> dict[str, float]:
    """Each file's seconds (setup, call and teardown of its tests) from ``pytest --durations=0`` output."""
    seconds: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        if match := _LINE.match(line):
            seconds[match.group(2)] += float(match.group(1))
    return {name: round(total, 1) for name, total in sorted(seconds.items())}


if __name__ == "__main__":
    DURATIONS.write_text(json.dumps(record(Path(sys.argv[1])), indent=1) + "\n")
