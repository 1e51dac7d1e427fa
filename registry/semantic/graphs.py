"""Where a description's RDF lives in a SPARQL dataset: its named graph, and its registration information.

Shared by the write side (the RDF projection stores ``registration_triples`` with the description's RDF) and the
index (one named graph per description, named by ``graph_name``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import uuid
from collections import deque
from collections.abc import Iterable, Iterator

import pyoxigraph as ox

DISCOVERY = "https://www.w3.org/2022/wot/discovery-ontology#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

#: The "." that ends each N-Triples statement (one per line; literals cannot span lines): an N-Quads graph goes
#: before it.
_STATEMENT_END = re.compile(r"\.[ \t\r]*$", re.MULTILINE)
#: An IRI or a literal (group 1, left as it is), or a blank node label (group 2) in N-Triples: any character a
#: label may hold (letters of any script among them) up to the next space, IRI or literal.
_LITERAL_OR_BLANK_NODE = re.compile(r'(<[^>]*>|"(?:[^"\\]|\\.)*")|_:([^\s<>".][^\s<>"]*)')
#: Each ``_:`` and what follows it up to a space, ``<``, ``>``, ``"`` or ``.``: a superset of the labels of a text
#: (it finds ``_:`` in literals and IRIs too), each cut the same way wherever it is, so that two texts that share a
#: label share what this finds of it.
_LABEL_TEXT = re.compile(r'_:[^\s<>".]*')
#: The start of a statement (after a newline) whose object is a blank node, up to the object's label: a subject, an
#: IRI predicate, and no literal before it (``"`` is in no IRI and no label).
_BLANK_OBJECT = re.compile(r'\n(?:<[^>"\n]*>|_:[^\s"]+) <[^>"\n]*> _:[A-Za-z0-9_]')
#: A statement whose subject is a blank node, up to the first character of its label.
_BLANK_SUBJECT = re.compile(r"\n_:[A-Za-z0-9_]")
#: One N-Triples statement: its subject (an IRI's text in group 1, or a blank node label in group 2) and its object
#: when that is a blank node (group 3).
_STATEMENT = re.compile(r"^(?:<([^>]*)>|(_:\S+)) \S+ (?:(_:\S+)|.*?) \.[ \t\r]*$", re.MULTILINE)


def graph_name(thing_id: str) -> ox.NamedNode:
    """The named graph of a description: its id when that is an IRI, else a URN made from it."""
    try:
        return ox.NamedNode(thing_id)
    except ValueError:
        return ox.NamedNode("urn:lmos-registry:thing:" + uuid.uuid5(uuid.NAMESPACE_URL, thing_id).hex)


def rdf_problem(ntriples: str) -> str | None:
    """Why ``ntriples`` cannot be loaded by oxigraph's strict parser (what the SPARQL indexes load with); None
    when it can."""
    try:
        for _ in ox.parse(ntriples, ox.RdfFormat.N_TRIPLES):
            pass
    except (SyntaxError, ValueError) as error:
        return str(error)
    return None


def quads_in(graph: ox.NamedNode, ntriples: str) -> str:
    """The N-Triples statements as N-Quads of ``graph``."""
    return _STATEMENT_END.sub(f"{graph} .", ntriples)


def blank_nodes_apart(ntriples: str, prefix: str) -> str:
    """``ntriples`` with every blank node label prefixed (IRIs and literals untouched): descriptions loaded in one
    document or one SPARQL Update request keep their blank nodes apart.

    When every ``_:`` of the text is a label (at the start of a line, or after the predicate with no literal
    before it on its line: what the directory's own serialisers write), plain replacements do it; otherwise each
    IRI and literal is stepped over, a Python call for each (docs/performance.md)."""
    labels = ntriples.count("_:")
    if not labels:
        return ntriples
    objects = ntriples.count("> _:")
    text = "\n" + ntriples
    subjects = text.count("\n_:")
    if (
        labels == subjects + objects
        and objects == len(_BLANK_OBJECT.findall(text))
        and subjects == len(_BLANK_SUBJECT.findall(text))
    ):
        return text.replace("\n_:", "\n_:" + prefix).replace("> _:", "> _:" + prefix)[1:]
    return _LITERAL_OR_BLANK_NODE.sub(lambda match: match.group(1) or f"_:{prefix}{match.group(2)}", ntriples)


class DistinctBlankNodes:
    """Keeps apart the blank nodes of N-Triples texts loaded in one document (a bulk load of the SPARQL index): a
    text none of whose labels an earlier one used is taken as it is, one that shares a label with an earlier one
    gets its labels prefixed (:func:`blank_nodes_apart`, with a prefix nobody can foresee). The directory writes
    labels unique to each write, so the texts it stored are taken as they are: finding their labels costs less
    than rewriting them (docs/performance.md)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def of(self, ntriples: str) -> str:
        labels = set(_LABEL_TEXT.findall(ntriples))
        if not labels.isdisjoint(self._seen):
            ntriples = blank_nodes_apart(ntriples, f"r{uuid.uuid4().hex}x")
            labels = set(_LABEL_TEXT.findall(ntriples))
        self._seen |= labels
        return ntriples


def owns(thing_id: str, iri: str) -> bool:
    """Whether the description ``thing_id`` may state facts about ``iri``: its id, or an IRI it mints under its id
    with a fragment (``<id>#…``, when the id has no fragment of its own). A path or a query under an id is a
    resource of its own (another party may hold ``https://host/a/b`` beside ``https://host/a``); a fragment is
    defined by the document it is of (RFC 3986, section 3.5)."""
    if iri == thing_id:
        return True
    return "#" not in thing_id and len(iri) > len(thing_id) and iri[len(thing_id)] == "#" and iri.startswith(thing_id)


@dataclasses.dataclass(frozen=True, slots=True)
class OwnStatements:
    """The statements a description may make (N-Triples), and how many of the others were left out, by subject."""

    ntriples: str
    #: Statements left out, by the IRI they were about (with the statements about blank nodes only they reached).
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)


def own_statements(thing_id: str, ntriples: str) -> OwnStatements:
    """The statements of ``ntriples`` about the description ``thing_id`` itself (see :func:`owns`) and about the
    blank nodes reached from those. Statements about any other IRI are left out, and so are the blank nodes only
    they reached: a description cannot add a title, a form or a vendor to another one in the union of the graphs.
    Objects may be any IRI (links to others are statements about oneself)."""
    lines_with_iri_subject = ntriples.count("\n<") + ntriples.startswith("<")
    own_lines = ntriples.count(f"\n<{thing_id}>") + ntriples.startswith(f"<{thing_id}>")
    if "#" not in thing_id:
        own_lines += ntriples.count(f"\n<{thing_id}#") + ntriples.startswith(f"<{thing_id}#")
    if own_lines == lines_with_iri_subject:
        return OwnStatements(ntriples)
    return _without_foreign_subjects(thing_id, ntriples)


#: Statements (text, object blank node or None), by the blank node or the IRI they are about.
_BySubject = dict[str, list[tuple[str, str | None]]]


def _without_foreign_subjects(thing_id: str, ntriples: str) -> OwnStatements:
    kept, reached, about_blank, foreign = _split_by_subject(thing_id, ntriples)
    seen: set[str] = set()
    kept.extend(_reached_statements(reached, about_blank, seen))
    dropped = {
        iri: len(statements) + sum(1 for _ in _reached_statements(_blank_objects(statements), about_blank, seen))
        for iri, statements in foreign.items()
    }
    # Blank nodes that nothing reaches (JSON-LD's @included, a top-level @graph) stay: they are about nobody.
    kept.extend(text for node, statements in about_blank.items() if node not in seen for text, _ in statements)
    return OwnStatements("".join(line + "\n" for line in kept), dropped)


def _split_by_subject(thing_id: str, ntriples: str) -> tuple[list[str], list[str], _BySubject, _BySubject]:
    """The statements about what ``thing_id`` owns and the blank nodes they reach, in order; the statements about
    blank nodes, and those about IRIs it does not own, by subject."""
    kept: list[str] = []
    reached: list[str] = []
    about_blank: _BySubject = {}
    foreign: _BySubject = {}
    for match in _STATEMENT.finditer(ntriples):
        iri, blank, blank_object = match.groups()
        statement = (match.group(0), blank_object)
        if blank is not None:
            about_blank.setdefault(blank, []).append(statement)
        elif owns(thing_id, iri):
            kept.append(statement[0])
            if blank_object is not None:
                reached.append(blank_object)
        else:
            foreign.setdefault(iri, []).append(statement)
    return kept, reached, about_blank, foreign


def _blank_objects(statements: list[tuple[str, str | None]]) -> list[str]:
    return [blank_object for _, blank_object in statements if blank_object is not None]


def _reached_statements(start: Iterable[str], about_blank: _BySubject, seen: set[str]) -> Iterator[str]:
    """The statements about the blank nodes reached from ``start`` (breadth first) and not in ``seen`` yet,
    which they are added to."""
    pending = deque(start)
    while pending:
        node = pending.popleft()
        if node in seen:
            continue
        seen.add(node)
        for text, blank_object in about_blank.get(node, ()):
            yield text
            if blank_object is not None:
                pending.append(blank_object)


def registration_triples(
    thing_id: str, created: dt.datetime, modified: dt.datetime, expires: dt.datetime | None, ttl: float | None
) -> str:
    """``discovery:hasRegistrationInformation`` of the description, as the enriched TD would have it: what oxigraph
    writes for these triples (a random blank node, typed literals), written as text rather than built as terms
    and serialised (docs/performance.md)."""
    try:
        thing = ox.NamedNode(thing_id)
    except ValueError:
        return ""
    info = f"_:{ox.BlankNode().value}"
    lines = [
        f"{thing} <{DISCOVERY}hasRegistrationInformation> {info} .\n",
        f"{info} <{RDF_TYPE}> <{DISCOVERY}RegistrationInformation> .\n",
        f"{info} <{DISCOVERY}dateCreated> {_datetime(created)} .\n",
        f"{info} <{DISCOVERY}dateModified> {_datetime(modified)} .\n",
    ]
    if expires is not None:
        lines.append(f"{info} <{DISCOVERY}expires> {_datetime(expires)} .\n")
    if ttl is not None:
        lines.append(f'{info} <{DISCOVERY}ttl> "{int(ttl)}"^^<{XSD}unsignedInt> .\n')
    return "".join(lines)


def _datetime(moment: dt.datetime) -> str:
    """An xsd:dateTime literal in N-Triples (UTC, ``Z``)."""
    return f'"{moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")}"^^<{XSD}dateTime>'


__all__ = [
    "DistinctBlankNodes",
    "OwnStatements",
    "blank_nodes_apart",
    "graph_name",
    "own_statements",
    "owns",
    "quads_in",
    "rdf_problem",
    "registration_triples",
]
