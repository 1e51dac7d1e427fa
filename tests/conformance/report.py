"""Run the conformance suite and print the ``ID,Status`` report (like the W3C testing CSVs).

    python -m tests.conformance.report            # CSV on stdout, pytest's own output on stderr
    python -m tests.conformance.report -k listing  # extra arguments go to pytest

Same as ``python -m pytest tests/conformance --tdd-report -``; an assertion passes when all its tests pass,
``untested`` marks checklist ids (research §2.4) this suite has no test for (e.g. the events and SPARQL APIs).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parent


def main(arguments: list[str]) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.csv"
        with contextlib.redirect_stdout(sys.stderr):
            exit_code = pytest.main([str(SUITE), "-q", "--tdd-report", str(report), *arguments])
        if report.exists():
            sys.stdout.write(report.read_text(encoding="utf-8"))
    return int(exit_code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
