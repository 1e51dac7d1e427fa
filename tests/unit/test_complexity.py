"""Every block in registry/ is rated A or B by radon, or carries its reason beside it.

A block rated C or worse (complexity above 10) is either split or marked on the line above its ``def``/``class``
(above its decorators) with ``# complexity: <why>``, and named in the exceptions of
docs/decisions/0002-block-complexity-limit.md.
"""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parents[2]
DECISION = ROOT / "docs" / "decisions" / "0002-block-complexity-limit.md"
MARK = "# complexity:"


def _complex_blocks() -> list[tuple[Path, str, int]]:
    found = []
    for path in sorted((ROOT / "registry").rglob("*.py")):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            if cc_rank(block.complexity) >= "C":
                found.append((path, block.fullname, block.lineno))
    return found


def _reason_above(lines: list[str], lineno: int) -> str | None:
    index = lineno - 2
    while index >= 0 and lines[index].strip().startswith("@"):
        index -= 1
    text = lines[index].strip() if index >= 0 else ""
    return text.removeprefix(MARK).strip() if text.startswith(MARK) else None


def test_every_complex_block_is_a_documented_exception() -> None:
    decision = DECISION.read_text(encoding="utf-8")
    undocumented = []
    for path, name, lineno in _complex_blocks():
        where = f"{path.relative_to(ROOT)}::{name}"
        reason = _reason_above(path.read_text(encoding="utf-8").splitlines(), lineno)
        if not reason or len(reason.split()) < 3 or where not in decision:
            undocumented.append(f"{where} (line {lineno})")
    assert not undocumented, "blocks rated C or worse without a documented reason: " + ", ".join(undocumented)


def test_complex_blocks_are_found() -> None:
    source = "def branchy(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n" for i in range(12))
    assert [cc_rank(block.complexity) for block in cc_visit(source)] == ["C"]


def test_a_reason_is_read_above_decorators() -> None:
    lines = ["# complexity: one flat step list of the spec", "@decorator", "def f(): pass"]
    assert _reason_above(lines, 3) == "one flat step list of the spec"
    assert _reason_above(["x = 1", "def f(): pass"], 2) is None
