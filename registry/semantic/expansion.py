"""What the keys of a description mean: its LMOS members found by the IRI each key expands to in its JSON-LD
context, whatever the spelling (``lmos:vendor``, a prefix alias ``x:vendor``, the full IRI with ``#`` or ``/``, a
term of a local context, ``@vocab``, a nested or property-scoped ``@context``; ``@type`` and its aliases).

Every rule the directory applies to LMOS members (the vendor a key is bound to, kinds, capabilities, validation)
reads a description through :func:`normalised`, so the members it checks are the ones SPARQL sees in the RDF.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, cast

from registry.descriptions.model import LMOS_NAMESPACE, lmos_local_name
from registry.semantic.compiled import Context, Term, Unsupported

#: The canonical LMOS namespace in RDF (and the ``lmos:`` prefix of the SPARQL endpoint).
LMOS_IRI = LMOS_NAMESPACE + "#"
#: How the LMOS keys and types of a normalised document are written.
LMOS_KEY_PREFIX = "lmos:"
#: Spellings of LMOS IRIs that the RDF makes canonical.
LMOS_NON_CANONICAL = (LMOS_NAMESPACE + "/", "lmos:")

Resolve = Callable[[str], Any]


def canonical_iri(iri: str) -> str:
    """An IRI of the LMOS namespace written with ``/`` (or left as ``lmos:…``) as its canonical ``#`` form."""
    if not iri.startswith(LMOS_NON_CANONICAL):
        return iri
    for spelling in LMOS_NON_CANONICAL:
        if iri.startswith(spelling) and len(iri) > len(spelling):
            return LMOS_IRI + iri[len(spelling) :]
    return iri


def lmos_name(iri: str | None) -> str | None:
    """``vendor`` for an IRI that is the LMOS term ``vendor`` once canonical; None for any other IRI."""
    if iri is None:
        return None
    canonical = canonical_iri(iri)
    return canonical[len(LMOS_IRI) :] or None if canonical.startswith(LMOS_IRI) else None


#: Keys whose meaning a context keeps at most (documents may bring any number of keys).
_KEPT_KEYS = 4096


class _Key(NamedTuple):
    """What a key means in a context."""

    term: Term | None
    #: A keyword, an absolute IRI, or None (JSON-LD drops the member).
    iri: str | None
    #: The LMOS name the key expands to, if any.
    lmos: str | None
    #: Whether the key is spelled like an LMOS member (``lmos:…`` or an LMOS IRI), whatever it expands to.
    looks_lmos: bool


def _key(context: Context, key: str) -> _Key:
    known = context.keys.get(key)
    if known is not None:
        return cast(_Key, known)
    term = context.terms.get(key)
    if term is not None:
        iri = term.iri
    elif key.startswith("@"):
        iri = key
    else:
        try:
            iri = context.expand_iri(key, vocab=True)
        except Unsupported:
            iri = None
    meaning = _Key(term, iri, lmos_name(iri), lmos_local_name(key) is not None)
    if len(context.keys) >= _KEPT_KEYS:
        context.keys.clear()
    context.keys[key] = meaning
    return meaning


def lmos_members(
    context: Context, node: dict[str, Any], resolve: Resolve, *, top: bool = False
) -> Iterator[tuple[str, str, Context]]:
    """(key, LMOS name, context of its value) of each member of ``node`` whose key expands to an LMOS IRI.
    ``context`` is the one ``node`` appears in, its own ``@context`` applied here; for the document itself
    (``top``) it is the active context already, its ``@context`` included."""
    if "@context" in node and not top:
        context = context.derive(node["@context"], resolve)
    for key in node:
        if key == "@context":
            continue
        term, _, name, _ = _key(context, key)
        if name is not None:
            yield key, name, _value_context(context, term, resolve)


def _value_context(context: Context, term: Term | None, resolve: Resolve) -> Context:
    """The context a member's value is read in: ``context`` with the term's property-scoped context applied."""
    return context if term is None or term.context is None else context.derive(term.context, resolve)


def normalised(context: Context, node: dict[str, Any], resolve: Resolve, *, top: bool = False) -> dict[str, Any]:
    """``node`` with each LMOS member keyed ``lmos:<name>`` (its value normalised too, all the way down), ``@type``
    and its aliases as ``@type`` with LMOS types written ``lmos:<name>``, and keys that look like LMOS members but
    expand to something else keyed by their IRI (left out when they expand to nothing). Members stated under
    several spellings become one member with all their values. Other members are kept as they are. ``context``
    is as for :func:`lmos_members`."""
    if "@context" in node and not top:
        context = context.derive(node["@context"], resolve)
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "@context":
            result[key] = value
            continue
        member = _normalised_member(context, key, value, resolve)
        if member is not None:
            _add(result, *member)
    return result


def _normalised_member(context: Context, key: str, value: Any, resolve: Resolve) -> tuple[str, Any] | None:
    """The key and value a member of a node in ``context`` has in the normalised node (None: left out)."""
    term, iri, name, looks_lmos = _key(context, key)
    if iri == "@type":
        return "@type", [_type(context, item) for item in _as_list(value)]
    if name is not None:
        return LMOS_KEY_PREFIX + name, _normalised_value(_value_context(context, term, resolve), value, resolve)
    if not looks_lmos:
        return key, value
    if iri is not None:
        return iri, value
    return None


def _normalised_value(context: Context, value: Any, resolve: Resolve) -> Any:
    if isinstance(value, list):
        return [_normalised_value(context, item, resolve) for item in value]
    if isinstance(value, dict) and "@value" not in value:
        return normalised(context, value, resolve)
    return value


def _type(context: Context, value: Any) -> Any:
    """An ``@type`` value: ``lmos:<name>`` for an LMOS type, its IRI for one that only looks like it."""
    if not isinstance(value, str):
        return value
    try:
        iri = context.expand_iri(value, vocab=True)
    except Unsupported:
        iri = None
    name = lmos_name(iri)
    if name is not None:
        return LMOS_KEY_PREFIX + name
    return iri if lmos_local_name(value) is not None and iri is not None else value


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _add(result: dict[str, Any], key: str, value: Any) -> None:
    if key not in result:
        result[key] = value
    else:
        result[key] = _as_list(result[key]) + _as_list(value)


__all__ = [
    "LMOS_IRI",
    "LMOS_KEY_PREFIX",
    "LMOS_NON_CANONICAL",
    "canonical_iri",
    "lmos_members",
    "lmos_name",
    "normalised",
]
