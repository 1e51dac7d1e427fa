"""How the free text ``q`` of a search is read: a need in plain words, or the strict web-search syntax.

The rule (documented on the ``q`` and ``match`` parameters and in the README):

- ``match=all``: every word must match (web-search syntax: ``"quoted phrases"``, ``or``, ``-excluded``).
- ``match=any``: plain words; any of them may match, descriptions ranked by how well they match.
- no ``match``: strict when ``q`` uses the syntax (a double quote, the operator ``OR`` in capitals, a word that
  starts with ``-``), plain words otherwise: "version 2 or later" is a phrase of a need, not an operator.

Plain words are stemmed and matched as prefixes (``forecast`` finds "forecasts", ``calend`` "calendar"); the text
search configuration drops stop words (``the``, ``me``, ``for``).
"""

from __future__ import annotations

import re

MATCH_ALL = "all"
MATCH_ANY = "any"
MATCHES = (MATCH_ALL, MATCH_ANY)

#: Words of a plain query: letters and digits (nothing in them is tsquery syntax).
_WORD = re.compile(r"[^\W_]+")
#: Words shorter than this are matched whole, not as prefixes (``ai:*`` would match "aid", "aim", "air").
PREFIX_FROM = 4


def terms(text: str) -> list[str]:
    """The terms of ``q`` that count against the limit: its words, the ``or`` operators left out."""
    return [term for term in text.split() if term.lower() != "or"]


def uses_syntax(text: str) -> bool:
    """Whether ``q`` uses web-search syntax: a double quote, the operator ``OR``, or an excluded ``-word``."""
    return '"' in text or any(term == "OR" or (term.startswith("-") and len(term) > 1) for term in text.split())


def match_of(text: str, match: str | None) -> str:
    """How ``q`` matches: as ``match`` says, else strict when it uses the syntax, else plain words."""
    if match is not None:
        return match
    return MATCH_ALL if uses_syntax(text) else MATCH_ANY


def words(text: str) -> list[str]:
    """The distinct words of a plain query, in lower case and in order."""
    return list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))


def any_words_query(text: str) -> str:
    """The ``to_tsquery`` text of a plain query: its words joined by ``|``, the longer ones as prefixes."""
    return " | ".join(f"{word}:*" if len(word) >= PREFIX_FROM else word for word in words(text))


__all__ = ["MATCHES", "MATCH_ALL", "MATCH_ANY", "any_words_query", "match_of", "terms", "uses_syntax", "words"]
