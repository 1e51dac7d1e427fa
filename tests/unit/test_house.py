"""The code says what it does and why, in the present: no comment or docstring in ``registry/`` or ``migrations/``
names an issue number or a benchmark figure. Measurements live in docs/performance.md, decisions in
docs/decisions/, changes in CHANGELOG.md."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("registry", "migrations")

#: An issue of this project: "issue 12", "issues 3 and 4", "(#12)". Another project's (``encode/httpcore#946``) is a
#: reference a reader can follow, and is not matched.
ISSUE = re.compile(r"\bissues? #?\d+|(?<![\w/#])#\d+\b", re.IGNORECASE)
_NUMBER = r"(?<![\w.:%/-])\d(?:[\d,.]*\d)?"
_RANGE = rf"{_NUMBER}(?:\s?(?:-|\u2013|to)\s?\d(?:[\d,.]*\d)?)?"
#: A measured figure: a time below a second (``0.3 ms``, ``45 µs``), a rate (``3,400/s``, ``900 req/s``), a share
#: (``40 %``) or a factor (``20x``, or with a multiplication sign), alone or as a range. Seconds and sizes are left
#: out: they are how settings and limits are stated (``30 s``, ``4 MB``); HTTP statuses and RFC numbers carry no
#: unit.
FIGURE = re.compile(
    rf"{_RANGE}\s?(?:ms|µs|us|ns)\b"
    rf"|{_RANGE}\s?(?:[a-z]+\s?)?/s\b"
    rf"|{_RANGE}\s?%"
    rf"|{_RANGE}\s?[x\u00d7](?![\w])"
)


def _docstrings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = node.body[0] if node.body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            for offset, line in enumerate(first.value.value.splitlines()):
                yield first.lineno + offset, line


def _comments(source: str) -> Iterator[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """Every comment and docstring line of a Python file, with its line number."""
    source = path.read_text(encoding="utf-8")
    yield from _comments(source)
    yield from _docstrings(ast.parse(source))


def findings(text: str) -> list[str]:
    return [match.group(0) for pattern in (ISSUE, FIGURE) for match in pattern.finditer(text)]


def _files() -> list[Path]:
    return sorted(path for directory in CHECKED for path in (ROOT / directory).rglob("*.py"))


def test_no_comment_or_docstring_names_an_issue_or_a_benchmark_figure() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {', '.join(hits)}: {text.strip()}"
        for path in _files()
        for line, text in prose(path)
        if (hits := findings(text))
    ]
    assert not found, "history belongs in docs/performance.md, docs/decisions/ or CHANGELOG.md:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "# see issue 12",
        "(issues 3 and 4)",
        "fixed in #12",
        "# 3,400/s on the seed",
        "900 req/s",
        "861-999/s",
        "took 0.3 ms",
        "45 µs of a GET",
        "40 % of the CPU",
        "about 20x faster",
        "0.69-1.64x",
        "1.6\u00d7 the rate",
    ],
)
def test_history_is_found(text: str) -> None:
    assert findings(text)


@pytest.mark.parametrize(
    "text",
    [
        "answers 404 and 503 with Retry-After",
        "RFC 7807 problem details, RFC 9110 §8.8.3",
        "at most 30 s, doubling from 1 s",
        "bodies up to 4 MB",
        "encode/httpcore#946",
        "an IPv6 zone (fe80::1%eth0)",
        "npm's ``^0.x`` and ``1.x``",
        "``30d``, ``12h``, ``45s``",
        "sha256 digest",
        "the 1/64 of an IPv6 address",
    ],
)
def test_settings_and_references_are_not_history(text: str) -> None:
    assert findings(text) == []


def test_the_checked_files_are_read() -> None:
    files = _files()
    assert any(path.name == "app.py" for path in files)
    assert any(path.parent.name == "versions" for path in files)
