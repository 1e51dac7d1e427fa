"""SPARQL queries as people write them: LMOS namespace spellings made canonical, unknown prefixes named.

LMOS documents declare their namespace as ``https://eclipse.dev/lmos/protocol/v1`` (no delimiter), with ``/`` or
with ``#``; the directory reads them all as one vocabulary and its RDF uses ``…/v1#``. A query written with the
spelling the documents use (``PREFIX lmos: <https://eclipse.dev/lmos/protocol/v1>``) would silently match nothing,
so IRIs in that namespace are rewritten to the canonical spelling and the caller is told so. A prefix that is
neither declared nor pre-bound is refused with its name and the pre-bound list, instead of the parser's message.
"""

from __future__ import annotations

from registry.descriptions.model import LMOS_NAMESPACE
from registry.errors import BadRequest
from registry.semantic.expansion import LMOS_IRI
from registry.sparql.query import _TOKENS, PREFIXES
from registry.wire import Notice


def _canonical(iri: str) -> str | None:
    """The canonical form of an LMOS IRI written another way, None when it needs no change."""
    if not iri.startswith(LMOS_NAMESPACE) or iri.startswith(LMOS_IRI):
        return None
    rest = iri[len(LMOS_NAMESPACE) :]
    if rest == "" or rest.startswith("/"):
        return LMOS_IRI + rest[1:]
    return None


def canonical_lmos_namespace(query: str) -> tuple[str, list[Notice]]:
    """``query`` with LMOS IRIs (``<…/v1>``, ``<…/v1/>``, ``<…/v1/Agent>``) in the canonical ``…/v1#`` spelling."""
    parts: list[str] = []
    position = 0
    rewritten: list[str] = []
    for match in _TOKENS.finditer(query):
        if match.lastgroup != "iri":
            continue
        canonical = _canonical(match.group()[1:-1])
        if canonical is None:
            continue
        parts += [query[position : match.start()], f"<{canonical}>"]
        position = match.end()
        rewritten.append(match.group())
    if not rewritten:
        return query, []
    parts.append(query[position:])
    spellings = ", ".join(dict.fromkeys(rewritten))
    notice = Notice(
        code="lmos-namespace-rewritten",
        message=f"The query's LMOS IRIs {spellings} were read as <{LMOS_IRI}…>, the namespace the directory's RDF "
        "uses for every spelling documents declare",
        field="query",
    )
    return "".join(parts), [notice]


def check_prefixes(query: str) -> None:
    """Refuse a prefixed name whose prefix the query neither declares nor finds pre-bound, naming both."""
    tokens = [(match.lastgroup, match.group()) for match in _TOKENS.finditer(query) if match.lastgroup != "comment"]
    declared = _declared_prefixes(tokens)
    for kind, value in tokens:
        prefix = _prefix_of(kind, value)
        if prefix is not None and prefix not in declared and prefix != "_":
            raise _undeclared(prefix, value)


def _declared_prefixes(tokens: list[tuple[str | None, str]]) -> set[str]:
    """The pre-bound prefixes and those the query's ``PREFIX`` declarations name."""
    declared = set(PREFIXES)
    for index, (kind, value) in enumerate(tokens):
        if kind == "word" and value.upper() == "PREFIX" and index + 1 < len(tokens):
            following = tokens[index + 1][1]
            if following.endswith(":"):
                declared.add(following[:-1])
    return declared


def _prefix_of(kind: str | None, value: str) -> str | None:
    """The prefix of a token that is a prefixed name (None for anything else, variables included)."""
    if kind != "word" or value[0] in "?$" or ":" not in value:
        return None
    return value.split(":", 1)[0]


def _undeclared(prefix: str, value: str) -> BadRequest:
    bound = ", ".join(f"{name}: <{iri}>" for name, iri in PREFIXES.items())
    return BadRequest(
        f"The query uses the prefix {prefix!r} ({value}) without declaring it; add "
        f"PREFIX {prefix}: <…> or use a pre-bound prefix: {bound}",
        invalidParams=[{"name": "query", "reason": f"undeclared prefix {prefix!r}"}],
        prefix=prefix,
        prebound=sorted(PREFIXES),
    )


__all__ = ["canonical_lmos_namespace", "check_prefixes"]
