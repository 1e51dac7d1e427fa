"""JSON-LD 1.1 to N-Triples for the context features TDs use, with every processed context kept for reuse.

Why: oxigraph's JSON-LD parser spends nearly all of its time on a TD re-processing the TD context and its
property-scoped contexts for every affordance, form and schema; pyld does the same and more. Here a context is
processed once and its term definitions are reused, which makes a description several times cheaper.

Scope: term definitions with ``@id``, ``@type`` (``@id``, ``@vocab``, a datatype), ``@container`` (``@set``,
``@index``, ``@language``), property-based ``@index``, ``@language`` and property-scoped ``@context``; ``@vocab``,
default ``@language``; in documents node objects, ``@id``/``@type`` (and their aliases), inline contexts, arrays
and native values. Anything else raises :class:`Unsupported` and the caller falls back to oxigraph, so the
result is always oxigraph's (tests compare both on every real TD). Like oxigraph without a document base,
relative IRI references are dropped; unlike it, ``@direction`` is dropped (RDF 1.1) and names are plain strings.
"""

from __future__ import annotations

import functools
import math
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeGuard

from registry.descriptions.ids import is_iri

XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_LANGUAGE = re.compile(r"[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*\Z")
_GEN_DELIMS = tuple(":/?#[]@")
_TERM_KEYS = frozenset({"@id", "@type", "@container", "@index", "@language", "@context", "@prefix", "@direction"})
_CONTAINERS = frozenset({"@set", "@index", "@language"})
_UNSET: Any = object()
#: Names that come from a property-based ``@index`` (affordances, schema properties): plain strings in the RDF.
NAME_PREDICATES = frozenset(
    {"https://www.w3.org/2019/wot/td#name", "https://www.w3.org/2019/wot/json-schema#propertyName"}
)


class Unsupported(Exception):
    """A JSON-LD feature outside the compiled subset; the caller uses the general processor instead."""


class Term:
    __slots__ = ("container", "context", "index", "iri", "language", "prefix", "type")

    def __init__(self, iri: str | None) -> None:
        self.iri = iri
        self.type: str | None = None
        self.container: frozenset[str] = frozenset()
        self.index: str | None = None
        self.language: Any = _UNSET
        self.context: Any = None
        self.prefix = False


class Context:
    """An active context; derived contexts are memoised on their parent by the identity of the local context."""

    __slots__ = ("_derived", "keys", "language", "terms", "vocab")

    def __init__(self) -> None:
        self.terms: dict[str, Term] = {}
        self.vocab: str | None = None
        self.language: str | None = None
        self._derived: dict[int, tuple[Any, Context]] = {}
        #: What readers of documents made of keys in this context (registry.semantic.expansion), kept for reuse.
        self.keys: dict[str, Any] = {}

    def derive(self, local: Any, resolve: Callable[[str], Any]) -> Context:
        """``self`` with ``local`` applied. ``local`` must stay alive and unchanged (bundled or cached contexts)."""
        key = id(local)
        cached = self._derived.get(key)
        if cached is not None and cached[0] is local:
            return cached[1]
        derived = _process(self, local, resolve)
        if len(self._derived) > 1000:  # inline contexts deep inside documents: do not keep them all
            self._derived.clear()
        self._derived[key] = (local, derived)
        return derived

    def copy(self) -> Context:
        result = Context()
        result.terms = dict(self.terms)
        result.vocab = self.vocab
        result.language = self.language
        return result

    def expand_iri(self, value: str, *, vocab: bool) -> str | None:
        """An absolute IRI, a ``_:`` label, or None for what JSON-LD cannot turn into an absolute IRI."""
        if value.startswith("@"):
            raise Unsupported(f"keyword-like value {value}")
        if vocab:
            term = self.terms.get(value)
            if term is not None:
                return term.iri
        prefix, colon, suffix = value.partition(":")
        if colon:
            return self._expand_with_colon(value, prefix, suffix)
        if vocab and self.vocab is not None:
            return _checked(self.vocab + value)
        return None

    def _expand_with_colon(self, value: str, prefix: str, suffix: str) -> str:
        """A ``_:`` label as it is, a compact IRI by its prefix term, anything else as an absolute IRI."""
        if prefix == "_":
            return value
        if not suffix.startswith("//"):
            term = self.terms.get(prefix)
            if term is not None and term.iri is not None and term.prefix:
                return _checked(term.iri + suffix)
        return _checked(value)


def _checked(iri: str) -> str:
    if not is_iri(iri):  # what no RDF parser would read back (the index loads the N-Triples strictly)
        raise Unsupported(f"not a plain absolute IRI: {iri!r}")
    return iri


def _process(active: Context, local: Any, resolve: Callable[[str], Any]) -> Context:
    if isinstance(local, list):
        result = active
        for item in local:
            result = result.derive(item, resolve)
        return result
    if local is None:
        return Context()
    if isinstance(local, str):
        return active.derive(_remote(local, resolve), resolve)
    if not isinstance(local, dict):
        raise Unsupported("a context must be a map, a string, null or an array")
    return _apply_map(active, local, resolve)


def _apply_map(active: Context, local: dict[str, Any], resolve: Callable[[str], Any]) -> Context:
    """``active`` with a context map applied: its keywords first, then its term definitions."""
    result = active.copy()
    for key, value in local.items():
        if key.startswith("@"):
            _apply_keyword(result, key, value)
    defined: dict[str, bool] = {}
    for term in local:
        if not term.startswith("@"):
            _define(result, local, term, defined)
    return result


def _remote(url: str, resolve: Callable[[str], Any]) -> Any:
    """The context a URL names, from the ones kept offline."""
    remote = resolve(url)
    if remote is None:
        raise Unsupported(f"context {url} is not available offline")
    return remote


def _apply_keyword(result: Context, key: str, value: Any) -> None:
    """Applies one keyword entry of a local context (``@vocab``, ``@language``) to ``result``."""
    if key == "@vocab":
        result.vocab = _vocab(result, value)
    elif key == "@language":
        if value is not None and not _is_language(value):
            raise Unsupported("@language must be a language tag")
        result.language = value
    elif key not in ("@version", "@direction"):
        raise Unsupported(f"context keyword {key}")


def _vocab(result: Context, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise Unsupported("@vocab must be a string")
    iri = result.expand_iri(value, vocab=True) if value else None
    if iri is None:
        raise Unsupported("relative @vocab")
    return iri


def _define(result: Context, local: dict[str, Any], term: str, defined: dict[str, bool]) -> None:
    if defined.get(term):
        return
    if term in defined:
        raise Unsupported(f"cyclic term definition {term}")
    defined[term] = False
    result.terms[term] = _definition(result, local, term, defined)
    defined[term] = True


def _definition(result: Context, local: dict[str, Any], term: str, defined: dict[str, bool]) -> Term:
    """The definition of ``term`` in the context map ``local``, defining first the terms its IRIs use."""
    value = local[term]
    if _is_null_definition(value):
        return Term(None)
    simple = isinstance(value, str)
    if simple:
        value = {"@id": value}
    if not isinstance(value, dict) or not set(value) <= _TERM_KEYS:
        raise Unsupported(f"term definition of {term}")
    expand = functools.partial(_expand_defining, result, local, term, defined)
    iri = _term_iri(result, term, value.get("@id"), expand)
    definition = Term(iri)
    if value.get("@type") is not None:
        definition.type = _term_type(term, value["@type"], expand)
    _set_container(definition, term, value)
    if "@context" in value:
        definition.context = value["@context"]
    definition.prefix = _term_prefix(term, value.get("@prefix"), simple=simple, iri=iri)
    return definition


def _is_null_definition(value: Any) -> bool:
    """Whether a term definition decouples the term from any IRI: ``null`` or ``{"@id": null}``."""
    return value is None or (isinstance(value, dict) and "@id" in value and value["@id"] is None)


def _expand_defining(
    result: Context, local: dict[str, Any], term: str, defined: dict[str, bool], iri: str
) -> str | None:
    """``iri`` expanded in ``result`` once the term or prefix it names in ``local`` (other than ``term``) is defined."""
    prefix, colon, _ = iri.partition(":")
    if colon and prefix in local and prefix != term:
        _define(result, local, prefix, defined)
    elif not colon and iri in local and iri != term:
        _define(result, local, iri, defined)
    return result.expand_iri(iri, vocab=True)


def _term_iri(result: Context, term: str, iri_value: Any, expand: Callable[[str], str | None]) -> str:
    """The IRI (or the ``@id``/``@type`` alias) a term definition maps ``term`` to."""
    if isinstance(iri_value, str) and iri_value.startswith("@"):
        if iri_value not in ("@id", "@type"):
            raise Unsupported(f"{term} aliases {iri_value}")
        return iri_value
    if isinstance(iri_value, str):
        iri = expand(iri_value)
    elif iri_value is None and ":" in term:
        iri = expand(term)
    elif iri_value is None and result.vocab is not None:
        iri = result.vocab + term
    else:
        raise Unsupported(f"term {term} has no IRI")
    if iri is None:
        raise Unsupported(f"term {term} expands to a relative IRI")
    return iri


def _term_type(term: str, type_value: Any, expand: Callable[[str], str | None]) -> str:
    """The type coercion of a term: ``@id``, ``@vocab`` or a datatype IRI."""
    if type_value in ("@id", "@vocab"):
        return str(type_value)
    if not isinstance(type_value, str) or type_value.startswith("@"):
        raise Unsupported(f"@type {type_value} of {term}")
    datatype = expand(type_value)
    if datatype is None or datatype.startswith("_:"):
        raise Unsupported(f"datatype of {term}")
    return datatype


def _set_container(definition: Term, term: str, value: dict[str, Any]) -> None:
    """Sets ``@container``, the property-based ``@index`` and ``@language`` of a term definition."""
    if value.get("@container") is not None:
        definition.container = _containers(term, value["@container"])
    if "@index" in value:
        if not isinstance(value["@index"], str) or "@index" not in definition.container:
            raise Unsupported(f"@index of {term}")
        definition.index = value["@index"]
    if "@language" in value:
        language = value["@language"]
        if language is not None and not _is_language(language):
            raise Unsupported(f"@language of {term}")
        definition.language = language


def _containers(term: str, container: Any) -> frozenset[str]:
    """The ``@container`` values of a term: ``@set`` with ``@index`` or ``@language``, never both of those."""
    containers = frozenset(container if isinstance(container, list) else [container])
    if not containers <= _CONTAINERS or ("@index" in containers and "@language" in containers):
        raise Unsupported(f"@container {container} of {term}")
    return containers


def _is_language(value: Any) -> bool:
    """Whether ``value`` is a well-formed language tag."""
    return isinstance(value, str) and _LANGUAGE.match(value) is not None


def _term_prefix(term: str, prefix_flag: Any, *, simple: bool, iri: str) -> bool:
    """Whether a term serves as a compact IRI prefix: ``@prefix``, or a simple term ending in a gen-delim."""
    if prefix_flag is not None:
        if not isinstance(prefix_flag, bool):
            raise Unsupported("@prefix must be a boolean")
        return prefix_flag
    return simple and ":" not in term and iri.endswith(_GEN_DELIMS)


class Writer:
    """Walks one document and writes its triples as N-Triples lines."""

    def __init__(self, resolve: Callable[[str], Any], iri_filter: Callable[[str], str]) -> None:
        self.resolve = resolve
        self.iri = iri_filter
        self.lines: list[str] = []
        self._prefix = "b" + uuid.uuid4().hex
        self._count = 0
        self._labels: dict[str, str] = {}
        #: The IRIs the written statements are about (blank nodes aside).
        self.subjects: set[str] = set()

    def node_term(self, identifier: str | None) -> str:
        if identifier is None:
            self._count += 1
            return f"_:{self._prefix}n{self._count}"
        if identifier.startswith("_:"):
            label = self._labels.get(identifier)
            if label is None:
                self._count += 1
                label = self._labels[identifier] = f"_:{self._prefix}n{self._count}"
            return label
        return f"<{self.iri(identifier)}>"

    def node(self, context: Context, node: dict[str, Any], extra: tuple[str, str] | None = None) -> str:
        """Writes a node object and returns its subject term."""
        if "@context" in node:
            context = context.derive(node["@context"], self.resolve)
        subject_id, types, properties = _read_node(context, node)
        subject = self.node_term(subject_id)
        if subject_id is not None and not subject_id.startswith("_:"):
            self.subjects.add(subject[1:-1])
        write = self.lines.append
        if extra is not None:
            write(f"{subject} {extra[0]} {extra[1]} .\n")
        for type_iri in types:
            write(f"{subject} {RDF_TYPE} {self.node_term(type_iri)} .\n")
        for key, iri, term, value in properties:
            predicate = f"<{self.iri(iri)}>"
            for obj in self.values(context, key, term, value):
                write(f"{subject} {predicate} {obj} .\n")
        return subject

    def values(self, context: Context, key: str, term: Term | None, value: Any) -> list[str]:
        """Objects of ``key: value`` in a node of ``context``; ``term`` is the key's definition there."""
        if value is None:
            return []
        inner = context if term is None or term.context is None else context.derive(term.context, self.resolve)
        if isinstance(value, list):
            found: list[str] = []
            for item in value:
                found.extend(self.values(context, key, term, item))
            return found
        if isinstance(value, dict):
            return self._map_values(context, inner, key, term, value)
        obj = self.scalar(inner, inner.terms.get(key) if inner is not context else term, value)
        return [] if obj is None else [obj]

    def _map_values(
        self, context: Context, inner: Context, key: str, term: Term | None, value: dict[str, Any]
    ) -> list[str]:
        """Objects of a map value: a language map, an index map (by the term's container), else a node object."""
        container = term.container if term is not None else frozenset()
        if "@language" in container:
            return self._language_map(value)
        if "@index" in container:
            return self._index_map(context, inner, key, term, value)
        return [self.node(inner, value)]  # keywords other than @id, @type and @context make node() give up

    def _language_map(self, value: dict[str, Any]) -> list[str]:
        found: list[str] = []
        for language, texts in value.items():
            for text in texts if isinstance(texts, list) else [texts]:
                if text is None:
                    continue
                if not isinstance(text, str):
                    raise Unsupported("language map values must be strings")
                if language == "@none":
                    found.append(_literal(text))
                elif _LANGUAGE.match(language):
                    found.append(_literal(text, language=language.lower()))
                else:
                    raise Unsupported(f"language tag {language!r}")
        return found

    def _index_map(
        self, context: Context, inner: Context, key: str, term: Term | None, value: dict[str, Any]
    ) -> list[str]:
        """Objects of an index map: its values as the term's own values, or (property-based ``@index``) node
        objects that each state their index as the value of the index property."""
        assert term is not None
        if term.index is None:
            plain = Term(term.iri)
            plain.type, plain.language, plain.context = term.type, term.language, term.context
            return [obj for _, element in _index_entries(value) for obj in self.values(context, key, plain, element)]
        index_iri = context.expand_iri(term.index, vocab=True)
        return [
            self._indexed_node(context, inner, term.index, index_iri, index, element)
            for index, element in _index_entries(value)
        ]

    def _indexed_node(
        self, context: Context, inner: Context, index_key: str, index_iri: str | None, index: str, element: Any
    ) -> str:
        """Writes one node object of a property-indexed map, with its index as the value of ``index_key``."""
        if not isinstance(element, dict):
            raise Unsupported("property-indexed value that is not a node object")
        extra = None
        if index_iri is not None and not index_iri.startswith(("@", "_:")):
            obj = self.scalar(context, context.terms.get(index_key), index, name=index_iri in NAME_PREDICATES)
            if obj is not None:
                extra = (f"<{self.iri(index_iri)}>", obj)
        return self.node(inner, element, extra)

    def scalar(self, context: Context, term: Term | None, value: Any, *, name: bool = False) -> str | None:
        coercion = term.type if term is not None else None
        if isinstance(value, str):
            return self._string(context, term, coercion, value, name=name)
        if coercion in ("@id", "@vocab"):
            coercion = None
        return _native(value, coercion)

    def _string(
        self, context: Context, term: Term | None, coercion: str | None, value: str, *, name: bool
    ) -> str | None:
        """The object of a string value: an IRI, a typed literal, or a plain or language-tagged string."""
        if coercion in ("@id", "@vocab"):
            iri = context.expand_iri(value, vocab=coercion == "@vocab")
            return None if iri is None else self.node_term(iri)
        if coercion is not None:
            return _literal(value, datatype=self.iri(coercion))
        if name:
            return _literal(value)
        language = term.language if term is not None and term.language is not _UNSET else context.language
        return _literal(value, language=language.lower() if language else None)


def _read_node(
    context: Context, node: dict[str, Any]
) -> tuple[str | None, list[str], list[tuple[str, str, Term | None, Any]]]:
    """The subject, the types and the properties (key, IRI, term, value) of a node object in ``context``."""
    subject_id: str | None = None
    types: list[str] = []
    properties: list[tuple[str, str, Term | None, Any]] = []
    for key, value in node.items():
        if key == "@context":
            continue
        term = context.terms.get(key)
        iri = term.iri if term is not None else _key_iri(context, key)
        if iri == "@id":
            subject_id = _node_id(context, value, subject_id)
        elif iri == "@type":
            types.extend(_node_types(context, value))
        elif _is_property(iri):
            properties.append((key, iri, term, value))
    return subject_id, types, properties


def _key_iri(context: Context, key: str) -> str | None:
    """What a key without a term definition expands to: a keyword as it is, else its IRI (or None)."""
    return key if key.startswith("@") else context.expand_iri(key, vocab=True)


def _node_id(context: Context, value: Any, earlier: str | None) -> str:
    """The subject an ``@id`` (or alias) member gives a node object: one string, expanding to an absolute IRI."""
    if not isinstance(value, str) or earlier is not None:
        raise Unsupported("@id must be one string")
    subject_id = context.expand_iri(value, vocab=False)
    if subject_id is None:
        raise Unsupported("relative @id")
    return subject_id


def _is_property(iri: str | None) -> TypeGuard[str]:
    """Whether a member whose key expands to ``iri`` makes statements: not when it expands to nothing or to a
    blank node; a keyword other than ``@id`` and ``@type`` is outside the compiled subset."""
    if iri is None or iri.startswith("_:"):
        return False
    if iri.startswith("@"):
        raise Unsupported(f"keyword {iri} in a node object")
    return True


def _node_types(context: Context, value: Any) -> list[str]:
    """The expanded ``@type`` values of a node object; ones that expand to no IRI are dropped."""
    types: list[str] = []
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, str):
            raise Unsupported("@type values must be strings")
        type_term = context.terms.get(item)
        if type_term is not None and type_term.context is not None:
            raise Unsupported("type-scoped context")
        expanded = context.expand_iri(item, vocab=True)
        if expanded is not None:
            types.append(expanded)
    return types


def _index_entries(value: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(index, element) for each element of an index map, in order; ``@none`` is outside the compiled subset."""
    for index, item in value.items():
        if index == "@none":
            raise Unsupported("@none index")
        for element in item if isinstance(item, list) else [item]:
            yield index, element


def _native(value: Any, coercion: str | None) -> str:
    """The literal of a JSON boolean or number, with the datatype a term coerces it to, if any."""
    if isinstance(value, bool):
        return _literal("true" if value else "false", datatype=coercion or XSD + "boolean")
    if _is_integral(value):
        if coercion in (None, XSD + "integer"):
            return _literal(str(int(value)), datatype=XSD + "integer")
        return _literal(_double(float(value)), datatype=coercion)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Unsupported("non-finite number")
        return _literal(_double(value), datatype=coercion or XSD + "double")
    raise Unsupported(f"value of type {type(value).__name__}")


def _is_integral(value: Any) -> bool:
    """Whether JSON-LD writes a number as an integer: an int, or a float with no fraction below 10^21."""
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 1e21)


def _double(value: float) -> str:
    """The canonical xsd:double of JSON-LD's toRDF: ``1.1E0``, ``5.0E-1``."""
    mantissa, exponent = f"{value:.15E}".split("E")
    mantissa = mantissa.rstrip("0")
    if mantissa.endswith("."):
        mantissa += "0"
    return f"{mantissa}E{int(exponent)}"


def _literal(text: str, *, language: str | None = None, datatype: str | None = None) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    if language:
        return f'"{escaped}"@{language}'
    if datatype and datatype != XSD + "string":
        return f'"{escaped}"^^<{datatype}>'
    return f'"{escaped}"'
