"""What the RDF of a description says it is and who its vendor is: only statements about the description itself,
through lmos:metadata/lmos:vendor/lmos:name, literal and non-blank names stripped."""

from __future__ import annotations

from registry.semantic.expansion import LMOS_IRI
from registry.semantic.rdf import lmos_statements

THING = "urn:example:agent"


def statement(subject: str, predicate: str, obj: str) -> str:
    return f"{subject} {predicate} {obj} .\n"


def test_kinds_and_vendor_names_of_the_description_itself() -> None:
    lmos = f"<{LMOS_IRI}"
    ntriples = "".join(
        [
            statement(f"<{THING}>", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", f"{lmos}Agent>"),
            statement(f"<{THING}>", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", f"{lmos}Tool>"),
            statement(f"<{THING}>", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", "<urn:other:Kind>"),
            statement("<urn:someone:else>", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", f"{lmos}Tool>"),
            statement(f"<{THING}>", f"{lmos}metadata>", "_:m"),
            statement("_:m", f"{lmos}vendor>", "_:v"),
            statement("_:m", f"{lmos}vendor>", "<urn:vendor>"),
            statement("_:v", f"{lmos}name>", '" Acme "'),
            statement("_:v", f"{lmos}name>", '"   "'),
            statement("<urn:vendor>", f"{lmos}name>", '"Globex"@en'),
            statement("<urn:vendor>", f"{lmos}name>", "<urn:not-a-literal>"),
            statement("<urn:someone:else>", f"{lmos}metadata>", "_:m"),
            statement("_:m", "<urn:p>", '"no lmos here"'),
        ]
    )
    kinds, names = lmos_statements(THING, ntriples)
    assert kinds == {"agent", "tool"}
    assert names == {"Acme", "Globex"}


def test_nothing_said_is_nothing_found() -> None:
    assert lmos_statements(THING, "") == (set(), set())
    assert lmos_statements(THING, f'<{THING}> <urn:p> "x" .\n') == (set(), set())
