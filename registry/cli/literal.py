"""Registrants' text printed as it is, never as instructions to the terminal.

Titles, ids, descriptions and notices come from whoever registered them. Printed through Rich they would be read
as markup (``[link=http://evil]…`` becomes a hyperlink), emoji codes (``:umbrella:``) and highlighting, and their
control characters would reach the terminal (``\\x1b[2J`` clears the screen, U+202E reverses what follows). Every
command prints through the consoles made here, which read no markup, emoji or highlighting in text and show each
control character (C0, DEL, C1, bidirectional controls, line and paragraph separators) as a visible ``\\uXXXX``
escape; the same escape is valid inside JSON, N-Triples and Turtle strings, so machine-readable output keeps its
meaning. Styled words of the CLI's own are ``Text`` objects whose data parts went through :func:`literal`.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from rich.console import Console, HighlighterType, JustifyMethod, OverflowMethod
from rich.style import Style
from rich.text import Text

#: Characters a terminal acts on instead of showing: C0 controls, DEL, C1 controls, the bidirectional marks,
#: embeddings, overrides and isolates, and the line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: The same, less the C0 controls: what JSON output can still hold raw (msgspec escapes C0 itself).
_JSON_CONTROL = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def literal(text: str) -> str:
    """``text`` with every control character shown as ``\\uXXXX``."""
    return _CONTROL.sub(_escape, text)


def literal_lines(lines: list[str]) -> Text:
    """Several registrants' texts, one a line (a table cell that lists them)."""
    return Text("\n".join(literal(line) for line in lines))


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line of the CLI's own words, some styled (``(text, style)``), around data: every part is literal."""
    return Text.assemble(*((literal(part[0]), part[1]) if isinstance(part, tuple) else literal(part) for part in parts))


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as JSON (pretty with ``indent``), every control character escaped: the same JSON, safe to print."""
    encoded = msgspec.json.encode(value)
    text = (msgspec.json.format(encoded, indent=indent) if indent else encoded).decode()
    return _JSON_CONTROL.sub(_escape, text)


class LiteralConsole(Console):
    """A Rich console that prints every string literally: no markup, emoji or highlighting, controls escaped."""

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **options)

    def render_str(
        self,
        text: str,
        *,
        style: str | Style = "",
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        emoji: bool | None = None,
        markup: bool | None = None,
        highlight: bool | None = None,
        highlighter: HighlighterType | None = None,
    ) -> Text:
        return super().render_str(
            literal(text), style=style, justify=justify, overflow=overflow, emoji=False, markup=False, highlight=False
        )


__all__ = ["LiteralConsole", "json_text", "literal", "literal_lines", "styled"]
