"""A description as RDF: JSON-LD 1.1 to N-Triples with local contexts only, and one IRI scheme for LMOS terms.

Names must survive: the TD context indexes affordances and schema properties by a property (``"@index"``), so an
action carries ``td:name "getWeather"`` and an input property ``jsonschema:propertyName "question"``. pyld 3.3
drops these triples; oxigraph's JSON-LD parser keeps them, and so does :mod:`registry.semantic.compiled`, which
converts the context features TDs use from processed contexts kept in memory (about twenty times faster). What it
does not cover goes to oxigraph's parser, with remote contexts inlined from the :class:`ContextLibrary`: neither
can fetch anything.

LMOS: documents bind ``lmos`` to ``https://eclipse.dev/lmos/protocol/v1`` with no delimiter, ``/``, ``#`` or an
``@prefix`` definition. The RDF always uses :data:`LMOS_IRI` (``https://eclipse.dev/lmos/protocol/v1#``), so
``lmos:Agent`` is ``<https://eclipse.dev/lmos/protocol/v1#Agent>`` whatever the document wrote.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import re
from collections.abc import Iterator
from typing import Any

import msgspec
import pyoxigraph as ox

from registry.descriptions.model import CAPABILITY_LISTS, LMOS_NAMESPACE_SPELLINGS, lmos_local_name, strings_of
from registry.semantic.compiled import NAME_PREDICATES, Context, Unsupported, Writer
from registry.semantic.expansion import LMOS_IRI, LMOS_NON_CANONICAL, canonical_iri, lmos_members, normalised
from registry.semantic.loader import ContextLibrary

_DEFAULT_LMOS_BINDING: dict[str, Any] = {"lmos": LMOS_IRI}
_TAGGED_NAME = re.compile(rb'(?:#name|#propertyName)> "(?:[^"\\]|\\.)*"@')


@dataclasses.dataclass(frozen=True, slots=True)
class Rdf:
    """The triples of one description (N-Triples) and what could not be taken into account."""

    ntriples: str
    unknown_contexts: tuple[str, ...] = ()
    #: Why no RDF could be computed at all (the document is still stored and served).
    error: str | None = None
    #: The IRIs the statements are about, when the conversion kept count (None: look at the statements).
    subjects: frozenset[str] | None = None


class RdfConverter:
    def __init__(self, library: ContextLibrary) -> None:
        self.library = library
        self._inlined: dict[str, Any] = {}
        #: Identities of the contexts that live as long as the converter (bundled, operator, default binding).
        self._lasting = {id(_DEFAULT_LMOS_BINDING)}
        self._root = Context()
        #: One object per distinct inline context, so processed contexts are found again by identity.
        self._inline_contexts: dict[bytes, Any] = {}

    def unknown_contexts(self, document: dict[str, Any]) -> list[str]:
        return [entry for entry in _context_list(document) if isinstance(entry, str) and not self._inline(entry)]

    def convert(self, document: dict[str, Any]) -> Rdf:
        context, unknown = self._local_context(document)
        try:
            active = self._active(context)
            document = explicit_capabilities(document, active, self._inline)
            text, subjects = self._compiled(active, document)
            return Rdf(text, tuple(unknown), subjects=frozenset(subjects))
        except Unsupported:
            return self._general(context, unknown, self._with_explicit_capabilities(context, document))

    def convert_general(self, document: dict[str, Any]) -> Rdf:
        """oxigraph's JSON-LD 1.1 processor: every feature, a few milliseconds per description."""
        context, unknown = self._local_context(document)
        return self._general(context, unknown, self._with_explicit_capabilities(context, document))

    def lmos_normalised(self, document: Any) -> Any:
        """``document`` with its LMOS members keyed ``lmos:<name>`` by what their keys expand to
        (:func:`registry.semantic.expansion.normalised`); as it is when its context is beyond the compiled subset
        (the RDF projection then refuses a vendor or kind that reads differently in the RDF)."""
        if not isinstance(document, dict):
            return document
        try:
            return normalised(self._active(self._local_context(document)[0]), document, self._inline, top=True)
        except Unsupported:
            return document

    def _with_explicit_capabilities(self, context: list[Any], document: dict[str, Any]) -> dict[str, Any]:
        try:
            return explicit_capabilities(document, self._active(context), self._inline)
        except Unsupported:
            return explicit_capabilities(document, _plain_lmos_context(), self._inline)

    def _general(self, context: list[Any], unknown: list[str], document: dict[str, Any]) -> Rdf:
        body = {key: value for key, value in document.items() if key != "@context"}
        data = msgspec.json.encode({"@context": context, **body})
        try:
            triples = [quad.triple for quad in ox.parse(data, ox.RdfFormat.JSON_LD)]
        except (SyntaxError, ValueError) as error:
            return Rdf("", tuple(unknown), error=str(error))
        text = ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES) or b""
        if _needs_normalising(text):
            text = ox.serialize([_normalised(triple) for triple in triples], format=ox.RdfFormat.N_TRIPLES) or b""
        return Rdf(text.decode(), tuple(unknown))

    def _active(self, context: list[Any]) -> Context:
        """The active context of a document's top node (its processed contexts are kept for the next one)."""
        active = self._root
        for entry in context:
            if isinstance(entry, dict) and id(entry) not in self._lasting:
                key = msgspec.json.encode(entry)
                if len(self._inline_contexts) > 10_000:
                    self._inline_contexts.clear()
                entry = self._inline_contexts.setdefault(key, entry)
            active = active.derive(entry, self._inline)
        return active

    def _compiled(self, active: Context, document: dict[str, Any]) -> tuple[str, set[str]]:
        writer = Writer(self._inline, canonical_iri)
        body = {key: value for key, value in document.items() if key != "@context"}
        writer.node(active, body)
        text = "".join(writer.lines)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise Unsupported("text that is not valid Unicode") from error
        return text, writer.subjects

    def _inline(self, url: str) -> Any:
        if url not in self._inlined:
            document = self.library.get(url)
            self._inlined[url] = None if document is None else document["@context"]
            self._lasting.add(id(self._inlined[url]))
        return self._inlined[url]

    def _local_context(self, document: dict[str, Any]) -> tuple[list[Any], list[str]]:
        """The document's context with known URLs inlined, unknown ones left out and LMOS made canonical."""
        context: list[Any] = [_DEFAULT_LMOS_BINDING]
        unknown: list[str] = []
        for entry in _context_list(document):
            if isinstance(entry, str):
                inlined = self._inline(entry)
                if inlined is None:
                    unknown.append(entry)
                elif inlined is not context[-1]:  # TDs often list the TD 1.0 and 1.1 URLs: one document
                    context.append(inlined)
            elif isinstance(entry, dict):
                context.append(_canonical_lmos_definitions(entry))
            elif entry is None:
                context.append(None)
        return context, unknown


def _needs_normalising(ntriples: bytes) -> bool:
    """Whether oxigraph's N-Triples hold what the compiled converter writes otherwise: a ``@direction``, a name
    with a language, an LMOS IRI in a non-canonical spelling."""
    return (
        b"--ltr" in ntriples
        or b"--rtl" in ntriples
        or _TAGGED_NAME.search(ntriples) is not None
        or any(b"<" + iri.encode() in ntriples for iri in LMOS_NON_CANONICAL)
    )


_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_LMOS_KINDS = {LMOS_IRI + "Agent": "agent", LMOS_IRI + "Tool": "tool"}


def lmos_statements(thing_id: str, ntriples: str) -> tuple[set[str], set[str]]:
    """What the RDF of the description ``thing_id`` says it is (``agent``, ``tool``) and the names of its vendor
    (``<id> lmos:metadata/lmos:vendor/lmos:name``): what SPARQL answers about it."""
    lines = _lines_with(ntriples, LMOS_IRI)
    triples = [quad.triple for quad in ox.parse(lines, ox.RdfFormat.N_TRIPLES, lenient=True)] if lines else []
    thing = ox.NamedNode(thing_id)
    objects: _Objects = {}
    for triple in triples:
        objects.setdefault((triple.subject, triple.predicate.value), []).append(triple.object)
    return _kinds(objects, thing), _vendor_names(objects, thing)


#: The objects of the statements, by subject and predicate IRI.
_Objects = dict[tuple[Any, str], list[Any]]


def _kinds(objects: _Objects, thing: ox.NamedNode) -> set[str]:
    """``agent`` and ``tool`` for the LMOS types of ``thing``."""
    return {_LMOS_KINDS[kind.value] for kind in objects.get((thing, _RDF_TYPE), []) if kind.value in _LMOS_KINDS}


def _vendor_names(objects: _Objects, thing: ox.NamedNode) -> set[str]:
    """The non-blank literal names at ``thing lmos:metadata/lmos:vendor/lmos:name``, stripped."""
    names = (
        name
        for metadata in objects.get((thing, LMOS_IRI + "metadata"), [])
        for vendor in objects.get((metadata, LMOS_IRI + "vendor"), [])
        for name in objects.get((vendor, LMOS_IRI + "name"), [])
    )
    return {name.value.strip() for name in names if isinstance(name, ox.Literal) and name.value.strip()}


def _lines_with(ntriples: str, text: str) -> str:
    """The lines of ``ntriples`` that hold ``text``, each ending with a newline: found from each occurrence (a
    description's RDF has many more lines than LMOS statements)."""
    found: list[str] = []
    start = 0
    while (at := ntriples.find(text, start)) >= 0:
        line_start = ntriples.rfind("\n", 0, at) + 1
        start = ntriples.find("\n", at)
        if start < 0:
            start = len(ntriples)
        found.append(ntriples[line_start:start])
    return "".join(line + "\n" for line in found)


#: The converter whose contexts the directory's rules read descriptions with (:func:`lmos_normalised`).
_reading: RdfConverter | None = None


def read_with(converter: RdfConverter) -> None:
    """Read descriptions for the directory's rules with ``converter``'s contexts (the application's: bundled and
    the operator's), so that the rules read each member as its RDF has it."""
    global _reading
    _reading = converter


#: Readings kept while :func:`readings_kept` is open (id of the document → the document, its reading).
_kept: contextvars.ContextVar[dict[int, tuple[Any, Any]] | None] = contextvars.ContextVar("lmos_readings", default=None)


@contextlib.contextmanager
def readings_kept() -> Iterator[None]:
    """Within it, :func:`lmos_normalised` reads each document once: for the projections of one write, which each
    read the same stored document (which nothing changes meanwhile) and took a normalisation each. Opened within
    another, it keeps its readings in the outer one's: a write's validation and its projections share them."""
    if _kept.get() is not None:
        yield
        return
    token = _kept.set({})
    try:
        yield
    finally:
        _kept.reset(token)


def reading_carried(document: dict[str, Any], stored: dict[str, Any], key: str) -> None:
    """Within :func:`readings_kept`, keep the reading of ``stored``, which is ``document`` without its member
    ``key``, as ``document``'s reading without that member: each member is read apart from the others, so that
    is what reading ``stored`` gives. Only when ``key`` reads as itself (not as an LMOS member) and ``document``
    was read already; otherwise ``stored`` is read when asked for."""
    kept = _kept.get()
    reading = _kept_reading(kept, document)
    if kept is not None and isinstance(reading, dict) and key in document and reading.get(key) is document[key]:
        kept[id(stored)] = (stored, {name: value for name, value in reading.items() if name != key})


def _kept_reading(kept: dict[int, tuple[Any, Any]] | None, document: Any) -> Any:
    """The reading of ``document`` in ``kept``, or None."""
    found = kept.get(id(document)) if kept is not None else None
    return found[1] if found is not None and found[0] is document else None


def lmos_normalised(document: Any) -> Any:
    """``document`` with its LMOS members keyed ``lmos:<name>`` by what their keys expand to
    (:meth:`RdfConverter.lmos_normalised`): what every rule on LMOS members reads."""
    global _reading
    kept = _kept.get()
    found = _kept_reading(kept, document)
    if found is not None:
        return found
    if _reading is None:
        _reading = RdfConverter(ContextLibrary.load())
    reading = _reading.lmos_normalised(document)
    if kept is not None:
        kept[id(document)] = (document, reading)  # the document is held: its id names no other meanwhile
    return reading


def explicit_capabilities(document: dict[str, Any], context: Context, resolve: Any) -> dict[str, Any]:
    """``document`` with each LMOS capability entry made an ``lmos:Capability`` node of its own (the lists found by
    what their keys expand to in ``context``, the document's active context).

    Entries are written with plain keys (``id``, ``name``, ``version``) that the TD context reads as other things:
    ``id`` as the node's IRI, so two descriptions offering ``urn:cap:weather:forecast`` shared one node and each
    one's properties showed on the other's; ``version`` as ``td:versionInfo``, so a string version vanished.
    Here every member becomes an LMOS property (``lmos:id``, ``lmos:version``, …) of a blank node, which is per
    description. The stored document is not changed.
    """
    lists = [(path, value) for path, value in _capability_lists(document, context, resolve) if isinstance(value, list)]
    if not lists:
        return document
    result = dict(document)
    for path, entries in lists:
        nodes = [_capability_node(entry) if isinstance(entry, dict) else entry for entry in entries]
        if len(path) == 1:
            result[path[0]] = nodes
        else:
            result[path[0]] = {**result[path[0]], path[1]: nodes}
    return result


def _capability_lists(document: dict[str, Any], context: Context, resolve: Any) -> Iterator[tuple[list[str], Any]]:
    """The path and value of every member that lists LMOS capabilities, at the top or in ``lmos:metadata``."""
    for key, name, inner in lmos_members(context, document, resolve, top=True):
        if name in CAPABILITY_LISTS:
            yield [key], document[key]
        elif name == "metadata" and isinstance(document[key], dict):
            metadata = document[key]
            for member, member_name, _ in lmos_members(inner, metadata, resolve):
                if member_name in CAPABILITY_LISTS:
                    yield [key, member], metadata[member]


def _plain_lmos_context() -> Context:
    """A context in which only ``lmos:`` names LMOS members: for documents beyond the compiled subset."""
    return Context().derive(_DEFAULT_LMOS_BINDING, lambda url: None)


def _capability_node(entry: dict[str, Any]) -> dict[str, Any]:
    node: dict[str, Any] = {"@type": [LMOS_IRI + "Capability", *strings_of(entry.get("@type"))]}
    for key, value in entry.items():
        if key == "@type":
            continue
        local = "id" if key == "@id" else key if ":" not in key else lmos_local_name(key)
        node[key if local is None or local.startswith("@") else LMOS_IRI + local] = value
    return node


def _context_list(document: dict[str, Any]) -> list[Any]:
    context = document.get("@context")
    return context if isinstance(context, list) else [context] if context is not None else []


def _canonical_lmos_definitions(context: dict[str, Any]) -> dict[str, Any]:
    """Terms bound to any spelling of the LMOS namespace become prefixes of :data:`LMOS_IRI`."""
    result = dict(context)
    for term, definition in context.items():
        iri = definition.get("@id") if isinstance(definition, dict) else definition
        if isinstance(iri, str) and iri in LMOS_NAMESPACE_SPELLINGS:
            result[term] = LMOS_IRI
    return result


def _canonical_iri(term: Any) -> Any:
    return ox.NamedNode(canonical_iri(term.value)) if isinstance(term, ox.NamedNode) else term


def _normalised(triple: ox.Triple) -> ox.Triple:
    """LMOS IRIs written with ``/`` (``https://eclipse.dev/lmos/protocol/v1/vendor``) made canonical;
    ``@direction`` dropped as JSON-LD's default ``rdfDirection`` (null) does, since RDF 1.1 clients cannot read
    RDF 1.2 directional language tags (``"text"@en--ltr``); names are plain strings (identifiers, not text, even
    under a default ``@language``), so ``td:name "getWeather"`` matches whatever the context said."""
    obj = triple.object
    if isinstance(obj, ox.Literal):
        if triple.predicate.value in NAME_PREDICATES and obj.language:
            obj = ox.Literal(obj.value)
        elif obj.direction is not None:
            obj = ox.Literal(obj.value, language=obj.language)
    return ox.Triple(_canonical_iri(triple.subject), _canonical_iri(triple.predicate), _canonical_iri(obj))
