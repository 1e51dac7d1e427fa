"""Where a description's RDF lives in a SPARQL dataset: its named graph, and its registration information.

Shared by the write side (the RDF projection stores ``registration_triples`` with the description's RDF) and the
index (one named graph per description, named by ``graph_name``).
"""

from __future__ import annotations

import datetime as dt
import re
import uuid

import pyoxigraph as ox

DISCOVERY = "https://www.w3.org/2022/wot/discovery-ontology#"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

#: The "." that ends each N-Triples statement (one per line; literals cannot span lines): an N-Quads graph goes
#: before it.
_STATEMENT_END = re.compile(r"\.[ \t\r]*$", re.MULTILINE)
#: An IRI or a literal (group 1, left as it is), or a blank node label (group 2) in N-Triples.
_LITERAL_OR_BLANK_NODE = re.compile(r'(<[^>]*>|"(?:[^"\\]|\\.)*")|_:([A-Za-z0-9_][A-Za-z0-9_\-.]*)')


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
    document or one SPARQL Update request keep their blank nodes apart."""
    return _LITERAL_OR_BLANK_NODE.sub(lambda match: match.group(1) or f"_:{prefix}{match.group(2)}", ntriples)


def registration_triples(
    thing_id: str, created: dt.datetime, modified: dt.datetime, expires: dt.datetime | None, ttl: float | None
) -> str:
    """``discovery:hasRegistrationInformation`` of the description, as the enriched TD would have it."""
    try:
        thing = ox.NamedNode(thing_id)
    except ValueError:
        return ""
    info = ox.BlankNode()
    triples = [
        ox.Triple(thing, ox.NamedNode(DISCOVERY + "hasRegistrationInformation"), info),
        ox.Triple(info, ox.NamedNode(RDF_TYPE), ox.NamedNode(DISCOVERY + "RegistrationInformation")),
        ox.Triple(info, ox.NamedNode(DISCOVERY + "dateCreated"), _datetime(created)),
        ox.Triple(info, ox.NamedNode(DISCOVERY + "dateModified"), _datetime(modified)),
    ]
    if expires is not None:
        triples.append(ox.Triple(info, ox.NamedNode(DISCOVERY + "expires"), _datetime(expires)))
    if ttl is not None:
        literal = ox.Literal(str(int(ttl)), datatype=ox.NamedNode(XSD + "unsignedInt"))
        triples.append(ox.Triple(info, ox.NamedNode(DISCOVERY + "ttl"), literal))
    return (ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES) or b"").decode()


def _datetime(moment: dt.datetime) -> ox.Literal:
    return ox.Literal(
        moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"), datatype=ox.NamedNode(XSD + "dateTime")
    )


__all__ = ["blank_nodes_apart", "graph_name", "quads_in", "rdf_problem", "registration_triples"]
