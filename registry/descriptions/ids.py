"""Which strings the directory accepts as description ids: absolute IRIs (RFC 3987) of at most 2048 bytes.

An id names the description in paths, in headers (``Location``), in SPARQL (the description's named graph and the
subject of its triples) and in every index. An absolute IRI fits all of them: ``scheme ":" …`` with only the
characters the grammar allows in each part (``iunreserved``, ``sub-delims``, ``pct-encoded`` with two hex digits,
``ucschar`` beyond ASCII, ``iprivate`` in the query alone, ``[`` ``]`` only around an IPv6 or IPvFuture host).
Never a control character, a space, or one of ``<>"{}|\\^`` and the backtick; a ``%`` always starts ``%XX``.

:func:`id_problem` says what is wrong with an id (the first offending character, as ``U+XXXX`` with its position
counted in characters from 1), :func:`is_iri` answers quickly whether a string is an absolute IRI (the RDF
converter writes no other IRI).
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
import unicodedata
from urllib.parse import quote

#: Longest id accepted, in UTF-8 bytes: PostgreSQL cannot index (and so cannot store) much longer keys.
MAX_ID_BYTES = 2048

#: ``ucschar`` (RFC 3987 §2.2): the non-ASCII characters an IRI may hold anywhere.
_UCSCHAR = (
    "\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
    + "".join(f"\\U{plane:04X}0000-\\U{plane:04X}FFFD" for plane in range(0x1, 0xE))
    + "\\U000E1000-\\U000EFFFD"
)
#: ``iprivate``: the private-use characters, allowed in the query alone.
_IPRIVATE = "\ue000-\uf8ff\\U000F0000-\\U000FFFFD\\U00100000-\\U0010FFFD"
_UNRESERVED = "A-Za-z0-9\\-._~" + _UCSCHAR
_SUB_DELIMS = "!$&'()*+,;="
_PCT = "%[0-9A-Fa-f]{2}"
_PCHAR = f"(?:[{_UNRESERVED}{_SUB_DELIMS}:@]|{_PCT})"
_SCHEME = "[A-Za-z][A-Za-z0-9+.\\-]*"
_AUTHORITY = (
    f"(?:(?:[{_UNRESERVED}{_SUB_DELIMS}:]|{_PCT})*@)?"
    f"(?P<host>\\[[^\\[\\]/?#@]*\\]|(?:[{_UNRESERVED}{_SUB_DELIMS}]|{_PCT})*)"
    "(?::[0-9]*)?"
)
_IRI = re.compile(
    f"{_SCHEME}:"
    f"(?://{_AUTHORITY}(?:/{_PCHAR}*)*|/?(?:{_PCHAR}+(?:/{_PCHAR}*)*)?)"
    f"(?:\\?(?:{_PCHAR}|[/?{_IPRIVATE}])*)?"
    f"(?:\\#(?:{_PCHAR}|[/?])*)?"
)
#: Every character that may appear somewhere in an IRI (gen-delims included); anything else is never allowed.
_IRI_CHARACTER = re.compile(f"[{_UNRESERVED}{_SUB_DELIMS}:/?#\\[\\]@%{_IPRIVATE}]")
_IPRIVATE_CHARACTER = re.compile(f"[{_IPRIVATE}]")
_BAD_PERCENT = re.compile("%(?![0-9A-Fa-f]{2})")
_SCHEME_PREFIX = re.compile(f"{_SCHEME}:")
_IP_FUTURE = re.compile(f"v[0-9A-Fa-f]+\\.[A-Za-z0-9\\-._~{_SUB_DELIMS}:]+")
_PORT = re.compile("[0-9]*")


@dataclasses.dataclass(frozen=True, slots=True)
class IdProblem:
    """Why a string is not an acceptable id: ``reason`` is a sentence fragment ("U+007B … at position 8 …")."""

    reason: str
    #: The offending character and its position (from 1, in characters), when one character is to blame.
    character: str | None = None
    position: int | None = None


#: How characters without a Unicode name are described, by general category.
_UNNAMED = {
    "Cc": "a control character",
    "Co": "a private-use character",
    "Cs": "a surrogate",
    "Cn": "a noncharacter or unassigned",
}


def _described(character: str) -> str:
    name = unicodedata.name(character, "") or _UNNAMED.get(unicodedata.category(character), "a noncharacter")
    return f"U+{ord(character):04X} ({name})"


def _percent_encoded(character: str) -> str:
    return "".join(f"%{byte:02X}" for byte in character.encode("utf-8", "surrogatepass"))


def _character_problem(value: str, index: int, where: str, *, encodable: bool = True) -> IdProblem:
    """``encodable``: the character can stay in the id percent-encoded (not so in a port or a host's syntax)."""
    character = value[index]
    reason = f"{_described(character)} at position {index + 1} is not allowed {where}"
    if encodable:
        reason += f"; percent-encode it as {_percent_encoded(character)}"
    return IdProblem(reason, character, index + 1)


@functools.lru_cache(maxsize=4096)
def is_iri(value: str) -> bool:
    """Whether ``value`` is an absolute IRI (RFC 3987), of any length."""
    match = _IRI.fullmatch(value)
    return match is not None and _host_problem(match["host"]) is None


def _host_problem(host: str | None) -> str | None:
    """What is wrong with an IP-literal host (``[…]``); None for any other host."""
    if not host or not host.startswith("["):
        return None
    literal = host[1:-1]
    if _IP_FUTURE.fullmatch(literal):
        return None
    if "%" not in literal:  # an IPv6 zone (fe80::1%eth0) is not part of an IRI
        try:
            ipaddress.IPv6Address(literal)
            return None
        except ValueError:
            pass
    return f"the host {host} is neither an IPv6 address nor an IPvFuture literal (RFC 3987 §2.2)"


def iri_problem(value: str) -> IdProblem | None:
    """What keeps ``value`` from being an absolute IRI (RFC 3987); None when it is one."""
    if is_iri(value):
        return None
    for index, character in enumerate(value):
        if not _IRI_CHARACTER.match(character):
            return _character_problem(value, index, "in an IRI (RFC 3987)")
    bad_percent = _BAD_PERCENT.search(value)
    if bad_percent is not None:
        index = bad_percent.start()
        return IdProblem(
            f"U+0025 (PERCENT SIGN) at position {index + 1} does not start a percent-encoded octet (%XX); "
            "write a % as %25",
            "%",
            index + 1,
        )
    scheme = _SCHEME_PREFIX.match(value)
    if scheme is None:
        return IdProblem(
            "it is not an absolute IRI: it must start with a scheme and a colon (urn:, https:, …), "
            "such as urn:uuid:6f1d3a7a-1f97-4e6b-b45f-f3c2e1c84c77 or https://example.com/agents/weather"
        )
    return _part_problem(value, scheme.end())


def _part_problem(value: str, start: int) -> IdProblem:
    """The first character out of place after the scheme: ``[`` ``]`` outside an IP-literal host, a private-use
    character outside the query, a second ``#``, a port that is not a number, or an IP-literal that is none."""
    fragment_at = value.find("#", start)
    end = len(value) if fragment_at < 0 else fragment_at
    query_at = value.find("?", start, end)
    path_end = end if query_at < 0 else query_at
    path_start = start
    if value.startswith("//", start):
        authority_end = next((i for i in range(start + 2, path_end) if value[i] == "/"), path_end)
        problem = _authority_problem(value, start + 2, authority_end)
        if problem is not None:
            return problem
        path_start = authority_end
    return (
        _misplaced(value, path_start, path_end, "[]", "in the path of an IRI")
        or _misplaced(value, path_end, end, "[]", "in the query of an IRI", private_use=True)
        or _misplaced(value, end + 1, len(value), "[]#", "in the fragment of an IRI")
        or IdProblem("it is not an IRI (RFC 3987)")
    )


def _misplaced(
    value: str, start: int, end: int, delimiters: str, where: str, *, private_use: bool = False
) -> IdProblem | None:
    """The first character of ``value[start:end]`` that is one of ``delimiters`` or, unless ``private_use`` allows
    them (the query), a private-use character; None when there is none."""
    for index in range(start, end):
        character = value[index]
        if character in delimiters or (not private_use and _IPRIVATE_CHARACTER.match(character)):
            return _character_problem(value, index, where)
    return None


def _authority_problem(value: str, start: int, end: int) -> IdProblem | None:
    """What is out of place in the authority ``value[start:end]``: its user information, host or port."""
    at = value.find("@", start, end)
    host_start = start if at < 0 else at + 1
    problem = _misplaced(value, start, host_start, "[]", "in the user information of an IRI")
    if problem is not None:
        return problem
    if value.startswith("[", host_start):
        host_end, problem = _ip_literal_problem(value, host_start, end)
    else:
        host_end, problem = _host_name_problem(value, host_start, end)
    return problem or _port_problem(value, host_end, end)


def _ip_literal_problem(value: str, start: int, end: int) -> tuple[int, IdProblem | None]:
    """Where the IP-literal host starting at ``start`` ends, and what is wrong with it."""
    closing = value.find("]", start, end)
    if closing < 0:
        return end, IdProblem(f"the IP-literal host starting at position {start + 1} has no closing ]")
    problem = _host_problem(value[start : closing + 1])
    return closing + 1, None if problem is None else IdProblem(problem)


def _host_name_problem(value: str, start: int, end: int) -> tuple[int, IdProblem | None]:
    """Where the host starting at ``start`` ends (at the last colon, before a port), and its first character out
    of place."""
    colon = value.rfind(":", start, end)
    host_end = end if colon < 0 else colon
    return host_end, _misplaced(value, start, host_end, "[]@:", "in the host of an IRI")


def _port_problem(value: str, host_end: int, end: int) -> IdProblem | None:
    """What is wrong with what follows the host up to ``end``: nothing, or a colon and a port of digits."""
    if host_end >= end:
        return None
    if value[host_end] != ":":
        where = "after the host of an IRI (a port follows a colon)"
        return _character_problem(value, host_end, where, encodable=False)
    port = value[host_end + 1 : end]
    if _PORT.fullmatch(port):
        return None
    index = host_end + 1 + next(i for i, digit in enumerate(port) if not digit.isascii() or not digit.isdigit())
    return _character_problem(value, index, "in the port of an IRI (digits only)", encodable=False)


def id_problem(value: str) -> IdProblem | None:
    """What keeps ``value`` from being an id this directory accepts; None when it is acceptable."""
    if not value:
        return IdProblem("it is empty")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_ID_BYTES:
        return IdProblem(f"it is {size} bytes long; this directory accepts ids of up to {MAX_ID_BYTES} bytes of UTF-8")
    return iri_problem(value)


def position_problem(value: str) -> str | None:
    """What keeps ``value`` from being a position among ids (a page's ``after``, a cursor's id): text that
    PostgreSQL can store and compare (no NUL, UTF-8), as long as an id at most; None when it can be one. Any such
    text is a position, stored as an id or not."""
    if "\x00" in value:
        return "it contains NUL"
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return "it is not text (a lone surrogate)"
    if size > MAX_ID_BYTES:
        return f"it is {size} bytes long; ids are at most {MAX_ID_BYTES} bytes of UTF-8"
    return None


#: The characters of a URI (RFC 3986: unreserved, reserved and the % of percent-encoding) besides letters and digits.
_URI_CHARACTERS = "-._~:/?#[]@!$&'()*+,;=%"


def as_uri(iri: str) -> str:
    """``iri`` mapped to a URI (RFC 3987 §3.1): every other character percent-encoded as UTF-8. ASCII without
    control characters, so it fits in a header (``Location``) whatever the string holds."""
    return quote(iri, safe=_URI_CHARACTERS, encoding="utf-8", errors="surrogatepass")


__all__ = ["MAX_ID_BYTES", "IdProblem", "as_uri", "id_problem", "iri_problem", "is_iri", "position_problem"]
