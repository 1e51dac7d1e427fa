"""The SDK is typed for its users: ``py.typed`` ships with the package, so ``mypy --strict`` checks code that uses
it (the examples) against the SDK's own annotations."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_is_marked_typed() -> None:
    assert resources.files("registry").joinpath("py.typed").is_file()


def test_the_examples_pass_mypy_strict_against_the_sdk(tmp_path: Path) -> None:
    examples = sorted(str(path) for path in (ROOT / "examples").glob("*.py"))
    assert examples
    stdout, stderr, status = api.run(["--strict", "--cache-dir", str(tmp_path / "cache"), *examples])
    assert status == 0, stdout + stderr
