"""The guided tour (docs/reading.md) names only code that exists: every ``path/to/file.py:name`` it cites is a file
of the repository that defines ``name`` (a dotted name is a class or function and what it defines), and every file
it cites on its own exists. Read with ``ast``, so a name in a comment or a string does not count."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOUR = ROOT / "docs" / "reading.md"

#: ``registry/http/things.py:ThingsController.create_or_replace``: a Python file of the repository, a colon, a name.
REFERENCE = re.compile(r"\b((?:registry|tests|migrations|bench|examples)/[\w/]+\.py)(?::([A-Za-z_]\w*(?:\.\w+)*))?")

_Scope = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


def references(text: str) -> list[tuple[str, str | None]]:
    """The (file, name) pairs ``text`` cites, in order, without repeats; the name is None for a bare file."""
    return list(dict.fromkeys((match.group(1), match.group(2)) for match in REFERENCE.finditer(text)))


def _defined(scope: _Scope) -> dict[str, ast.AST]:
    """What ``scope`` defines in its own body: functions, classes and assigned names (also under ``if``/``try``)."""
    found: dict[str, ast.AST] = {}
    pending: list[ast.stmt] = list(scope.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.setdefault(node.name, node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, node)
        elif isinstance(node, ast.If | ast.Try):
            pending.extend([*node.body, *node.orelse])
    return found


@functools.cache
def _module(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text(encoding="utf-8"))


def defines(tree: ast.Module, dotted: str) -> bool:
    """Whether ``tree`` defines ``dotted``: ``name`` at module level, ``Class.member`` within what it names."""
    scope: ast.AST = tree
    for part in dotted.split("."):
        if not isinstance(scope, _Scope):
            return False
        found = _defined(scope).get(part)
        if found is None:
            return False
        scope = found
    return True


def problems(text: str) -> list[str]:
    """Each reference of ``text`` to a file that does not exist or to a name its file does not define."""
    found = []
    for path, name in references(text):
        if not (ROOT / path).is_file():
            found.append(f"{path}: no such file")
        elif name is not None and not defines(_module(path), name):
            found.append(f"{path}:{name}: not defined there")
    return found


def test_every_reference_of_the_tour_exists() -> None:
    text = TOUR.read_text(encoding="utf-8")
    assert not problems(text), "docs/reading.md names code that is not there:\n" + "\n".join(problems(text))


def test_the_tour_follows_both_requests_through_every_layer() -> None:
    cited = {path for path, _ in references(TOUR.read_text(encoding="utf-8"))}
    for layer in ("app.py", "http/", "directory/", "discovery/", "projections/", "store/", "store/catalog/"):
        assert any(path.startswith(f"registry/{layer}") for path in cited), f"the tour cites nothing in {layer}"


def test_the_readme_links_the_tour() -> None:
    assert "(docs/reading.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("`registry/app.py:create_app`", []),
        ("`registry/http/things.py:ThingsController.create_or_replace`", []),
        ("`registry/ops/metrics.py:REQUEST_METRICS`", []),
        ("`registry/store/database.py`", []),
        ("`registry/app.py:no_such_function`", ["registry/app.py:no_such_function: not defined there"]),
        (
            "`registry/http/things.py:ThingsController.nothing`",
            ["registry/http/things.py:ThingsController.nothing: not defined there"],
        ),
        ("`registry/no_such_module.py:create_app`", ["registry/no_such_module.py: no such file"]),
        ("`registry/app.py:create_app.lifespan`", []),
    ],
)
def test_stale_references_are_found(text: str, expected: list[str]) -> None:
    assert problems(text) == expected
