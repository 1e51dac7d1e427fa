"""The README's configuration tables, generated from the settings' fields: ``python -m registry.config``."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from registry.config.fields import ENV_PREFIX, GROUPS
from registry.config.settings import Settings

#: The markers around the configuration tables in README.md, which ``python -m registry.config --write`` rewrites.
README_BEGIN = "<!-- python -m registry.config --write README.md: begin -->"
README_END = "<!-- python -m registry.config --write README.md: end -->"


def _shown(field: dataclasses.Field[Any]) -> str:
    if field.metadata["shown"] is not None:
        return str(field.metadata["shown"])
    value = field.default
    if value is None:
        return "*(none)*"
    if value in ("", ()):
        return "*(empty)*"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        return f"`{int(value)}`"
    if isinstance(value, tuple):
        return f"`{','.join(value)}`"
    return f"`{value}`"


def _escaped(text: str) -> str:
    """``text`` inside a Markdown table cell."""
    return text.replace("|", "\\|")


def markdown() -> str:
    """The settings as Markdown: a table per group, in the order of ``GROUPS``."""
    fields = dataclasses.fields(Settings)
    sections = []
    for group in GROUPS:
        rows = [
            f"| `{ENV_PREFIX}{field.name.upper()}` | {_shown(field)} | {_escaped(field.metadata['doc'])} |"
            for field in fields
            if field.metadata["group"] == group
        ]
        sections.append(f"### {group}\n\n| Variable | Default | Meaning |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(sections)


def with_markdown(readme: str) -> str:
    """``readme`` with :func:`markdown` between its markers."""
    before, found, rest = readme.partition(README_BEGIN + "\n")
    _, found_end, after = rest.partition(README_END)
    if not found or not found_end:
        raise ValueError(f"the README has no {README_BEGIN} … {README_END} markers")
    return f"{before}{README_BEGIN}\n{markdown()}{README_END}{after}"


def main(argv: Sequence[str]) -> int:
    """``python -m registry.config``: print the configuration tables; ``--write README.md``: put them into it."""
    if not argv:
        print(markdown(), end="")
        return 0
    if len(argv) != 2 or argv[0] != "--write":
        print("usage: python -m registry.config [--write README.md]", file=sys.stderr)
        return 2
    path = Path(argv[1])
    path.write_text(with_markdown(path.read_text()))
    return 0
