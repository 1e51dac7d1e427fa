"""Which ids the directory accepts (registry/descriptions/ids.py): absolute IRIs (RFC 3987) of at most 2048 bytes,
refused with the offending character named as U+XXXX with its position."""

from __future__ import annotations

import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.descriptions.ids import MAX_ID_BYTES, as_uri, id_problem, is_iri

ACCEPTED = [
    "urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77",
    "https://example.com/agents/weather",
    "https://user@example.com:8443/a/b?x=1&y=2#frag",
    "http://[::1]/a",
    "http://[v7.abc]/",
    "urn:x:%7B%20%7D",
    "urn:x:é/日本",
    "urn:x?q=\ue000",
    "tag:example.com,2026:agent/1",
    "a:",
]
#: (id, the character named, its position from 1)
REFUSED = [
    ("urn:x:a[b", "[", 8),
    ("urn:x:a]b", "]", 8),
    ("urn:x:a{b", "{", 8),
    ("urn:x:a}b", "}", 8),
    ("urn:x:a|b", "|", 8),
    ("urn:x:a^b", "^", 8),
    ("urn:x:a\\b", "\\", 8),
    ("urn:x:a<b", "<", 8),
    ("urn:x:a>b", ">", 8),
    ('urn:x:a"b', '"', 8),
    ("urn:x:a`b", "`", 8),
    ("urn:x:a b", " ", 8),
    ("urn:x:a\nb", "\n", 8),
    ("urn:x:a\r\nb", "\r", 8),
    ("urn:x:a\tb", "\t", 8),
    ("urn:x:a\x7fb", "\x7f", 8),
    ("urn:x:a\x85b", "\x85", 8),
    ("urn:x:a\ufffeb", "\ufffe", 8),
    ("urn:x:a%zz", "%", 8),
    ("urn:x:\ue000", "\ue000", 7),
    ("urn:x#a#b", "#", 8),
    ("http://a:80x/", "x", 12),
]


@pytest.mark.parametrize("thing_id", ACCEPTED)
def test_absolute_iris_are_accepted(thing_id: str) -> None:
    assert id_problem(thing_id) is None
    assert is_iri(thing_id)


@pytest.mark.parametrize(("thing_id", "character", "position"), REFUSED)
def test_each_character_an_iri_cannot_hold_is_named_with_its_position(
    thing_id: str, character: str, position: int
) -> None:
    problem = id_problem(thing_id)
    assert problem is not None
    assert (problem.character, problem.position) == (character, position)
    assert f"U+{ord(character):04X}" in problem.reason
    assert f"at position {position}" in problem.reason
    assert not is_iri(thing_id)


@pytest.mark.parametrize("thing_id", ["nocolon", "1abc:x", "/things/x", ":x", "weather agent"])
def test_an_id_without_a_scheme_is_refused(thing_id: str) -> None:
    problem = id_problem(thing_id)
    assert problem is not None
    if " " not in thing_id:
        assert "must start with a scheme" in problem.reason


def test_ids_are_bounded_in_bytes() -> None:
    assert id_problem("urn:" + "x" * (MAX_ID_BYTES - 4)) is None
    problem = id_problem("urn:" + "é" * MAX_ID_BYTES)
    assert problem is not None
    assert f"up to {MAX_ID_BYTES} bytes" in problem.reason
    assert id_problem("") is not None


def test_an_ip_literal_must_be_one() -> None:
    problem = id_problem("http://[zz]/a")
    assert problem is not None
    assert "[zz]" in problem.reason
    assert id_problem("http://[fe80::1%25eth0]/") is not None  # zones are not part of an IRI


_PIECES = list("aZ09-._~!$&'()*+,;=:/?#[]@% <>\"{}|\\^`\n\x7f\x85é\u00a0\ue000\ufffe\U0001f600")
_PIECES += ["%2F", "%zz", "[::1]", "[v1.a]", ":80", "[fe80::1%25x]"]


@settings(max_examples=3000, deadline=None)
@given(
    st.sampled_from(["urn:", "http://", "a:", "https://u@", "http://[::1]", "x+y:", ""]),
    st.lists(st.sampled_from(_PIECES), max_size=10).map("".join),
)
def test_the_ids_accepted_are_exactly_the_iris_oxigraph_reads(scheme: str, rest: str) -> None:
    """What the SPARQL index loads (strictly) is what the directory accepts: no accepted id can stop it."""
    thing_id = scheme + rest
    try:
        ox.NamedNode(thing_id)
        oxigraph_reads = True
    except ValueError:
        oxigraph_reads = False
    assert is_iri(thing_id) == oxigraph_reads
    if oxigraph_reads:
        list(ox.parse(f"<{thing_id}> <urn:p> <{thing_id}> <{thing_id}> .\n", ox.RdfFormat.N_QUADS))
    else:
        assert id_problem(thing_id) is not None


def test_an_id_in_a_header_is_ascii_without_control_characters() -> None:
    assert as_uri("urn:x:é") == "urn:x:%C3%A9"
    assert as_uri("/things/https://example.com/a?b#c") == "/things/https://example.com/a?b#c"
    assert as_uri("urn:x:a\r\nInjected: 1") == "urn:x:a%0D%0AInjected:%201"
