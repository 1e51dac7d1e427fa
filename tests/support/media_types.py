"""A media-type parser as strict as Go's ``mime.ParseMediaType`` (what Prometheus 3 and other Go clients use):
a type/subtype of tokens, parameters of a token name and a token or quoted-string value, and no parameter twice."""

from __future__ import annotations

import re

_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = r'"(?:[^"\\\r\n]|\\.)*"'
_TYPE = re.compile(rf"^\s*({_TOKEN})/({_TOKEN})\s*")
_PARAMETER = re.compile(rf"^;\s*({_TOKEN})=({_TOKEN}|{_QUOTED})\s*")


class MediaTypeError(ValueError):
    pass


def parse_media_type(value: str) -> tuple[str, dict[str, str]]:
    """The media type (lower case) and its parameters (names lower case); raises ``MediaTypeError`` where Go's
    parser returns an error."""
    head = _TYPE.match(value)
    if head is None:
        raise MediaTypeError(f"no media type in {value!r}")
    media_type = f"{head[1]}/{head[2]}".lower()
    parameters: dict[str, str] = {}
    rest = value[head.end() :]
    while rest:
        parameter = _PARAMETER.match(rest)
        if parameter is None:
            raise MediaTypeError(f"invalid media parameter in {value!r} at {rest!r}")
        name = parameter[1].lower()
        if name in parameters:
            raise MediaTypeError(f"duplicate parameter name {name!r} in {value!r}")
        raw = parameter[2]
        parameters[name] = re.sub(r"\\(.)", r"\1", raw[1:-1]) if raw.startswith('"') else raw
        rest = rest[parameter.end() :]
    return media_type, parameters
