"""Semantic versions and version ranges: npm syntax (node-semver) and Ivy/Maven intervals translated to it.

Capability versions in the wild are often short (``1.0``, ``v2``); they are completed to ``MAJOR.MINOR.PATCH``
before comparison, the stored text stays as registered.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import nodesemver

#: Longest version the directory accepts (``version.instance``, an LMOS version, capability versions, MCP server
#: and A2A card versions).
MAX_VERSION_CHARS = 256
#: Most digits in one numeric component of a version (MAJOR, MINOR, PATCH, a numeric pre-release identifier):
#: 18 digits always fit a signed 64-bit integer, and no conversion of a component to a number can fail.
MAX_VERSION_DIGITS = 18
#: The components of a version text: what lies between ``.``, ``-`` and ``+`` (a leading ``v`` or ``=`` aside).
_COMPONENT_SEPARATORS = re.compile(r"[.+\-]")
_DIGITS = re.compile(r"[0-9]+")
_SHORT_VERSION = re.compile(r"^\s*[vV=]?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?P<rest>[-+][0-9A-Za-z.+-]*)?\s*$")
#: One Ivy/Maven interval: ``[1.0,2.0)``, ``(,2.0]``, ``[1.5]``, and Ivy's reversed brackets ``]1.0,2.0[``.
_INTERVAL = re.compile(r"([\[\]\(])\s*([^,\[\]\(\)]*?)\s*(?:,\s*([^,\[\]\(\)]*?)\s*)?([\]\[\)])")


class RangeError(ValueError):
    """A version range that neither npm nor Ivy/Maven syntax can read."""


def version_problem(text: str) -> str | None:
    """Why the directory does not accept ``text`` as a version (too long, or a numeric component with too many
    digits); None when it is within the bounds. Says nothing of the syntax (see ``normalise_version``)."""
    if len(text) > MAX_VERSION_CHARS:
        return f"it is {len(text)} characters long; this directory accepts versions of up to {MAX_VERSION_CHARS}"
    for component in _COMPONENT_SEPARATORS.split(text.strip().lstrip("vV=")):
        if len(component) > MAX_VERSION_DIGITS and _DIGITS.fullmatch(component):
            return (
                f"a numeric component has {len(component)} digits; this directory accepts up to "
                f"{MAX_VERSION_DIGITS} per component"
            )
    return None


@functools.lru_cache(maxsize=8192)
def normalise_version(text: str) -> str | None:
    """``1.2`` → ``1.2.0``, ``v2`` → ``2.0.0``; None when ``text`` is no version at all, or one out of the bounds
    of ``version_problem`` (stored before they were checked, it is read as no version rather than fail)."""
    if version_problem(text) is not None:
        return None
    match = _SHORT_VERSION.match(text)
    if match is None:
        return None
    major, minor, patch = (part or "0" for part in match.groups()[:3])
    candidate = f"{int(major)}.{int(minor)}.{int(patch)}{match.group('rest') or ''}"
    return candidate if nodesemver.valid(candidate, False) else None


def _maven_bound(text: str) -> str:
    version = normalise_version(text)
    if version is None:
        raise RangeError(f"{text!r} is not a version")
    return version


def maven_to_npm(text: str) -> str:
    """Translate an Ivy/Maven range (one or more intervals separated by commas) to npm syntax."""
    alternatives: list[str] = []
    position = 0
    stripped = text.strip()
    while position < len(stripped):
        match = _INTERVAL.match(stripped, position)
        if match is None:
            raise RangeError(f"{text!r} is not an Ivy/Maven range such as [1.0,2.0)")
        alternatives.append(_interval_to_npm(match))
        position = _after_separator(stripped, match.end())
    return " || ".join(alternatives)


def _interval_to_npm(interval: re.Match[str]) -> str:
    """One interval in npm syntax: ``[1.5]`` → ``=1.5.0``, ``[1.0,2.0)`` → ``>=1.0.0 <2.0.0``, ``(,)`` → ``*``."""
    opening, low, high, closing = interval.groups()
    if high is None:
        if opening != "[" or closing != "]" or not low:
            raise RangeError(f"{interval.group(0)!r}: an exact version is written [1.0]")
        return f"={_maven_bound(low)}"
    comparators = []
    if low:
        comparators.append((">=" if opening == "[" else ">") + _maven_bound(low))
    if high:
        comparators.append(("<=" if closing == "]" else "<") + _maven_bound(high))
    return " ".join(comparators) or "*"


def _after_separator(text: str, position: int) -> int:
    """Where the next interval of ``text`` starts: past blanks and one comma from ``position``."""
    rest = text[position:].lstrip()
    if rest.startswith(","):
        rest = rest[1:].lstrip()
    return len(text) - len(rest)


@functools.lru_cache(maxsize=4096)
def parse_range(text: str) -> nodesemver.Range:
    """A range in npm syntax (``^1.2``, ``~1.2.3``, ``>=1 <2``, ``1.x``) or Ivy/Maven syntax (``[1.0,2.0)``)."""
    if not isinstance(text, str) or not text.strip():
        raise RangeError("a version range must be a non-empty string")
    stripped = text.strip()
    npm = maven_to_npm(stripped) if stripped[0] in "[](" else stripped
    try:
        return nodesemver.make_range(npm, False)
    except (ValueError, TypeError) as error:
        message = f"{text!r} is not a version range (npm ^1.2, ~1.2.3, >=1 <2, 1.x or Maven [1.0,2.0))"
        raise RangeError(message) from error


@functools.lru_cache(maxsize=65536)
def satisfies(version: str, version_range: str) -> bool:
    normalised = normalise_version(version)
    return normalised is not None and parse_range(version_range).test(normalised)


@functools.lru_cache(maxsize=8192)
def sort_key(version: str) -> nodesemver.SemVer | None:
    """The parsed version (shared from a cache: do not modify it)."""
    normalised = normalise_version(version)
    return None if normalised is None else nodesemver.make_semver(normalised, False)


@functools.lru_cache(maxsize=8192)
def precedence(version: str) -> tuple[Any, ...]:
    """A sort key in SemVer precedence order (a release after its pre-releases); ``version`` must be one."""
    key = sort_key(version)
    if key is None:
        raise ValueError(f"not a version: {version!r}")
    identifiers = tuple((0, part, "") if isinstance(part, int) else (1, 0, str(part)) for part in key.prerelease)
    return (key.major, key.minor, key.patch, 0 if identifiers else 1, identifiers)


def version_order(version: str) -> tuple[Any, ...]:
    """A sort key for any version text: semantic versions in precedence order (1.2.9 before 1.2.17), then the
    texts that are none, alphabetically."""
    return (1, (), version) if sort_key(version) is None else (0, precedence(version), "")


def distance(left: str, right: str) -> tuple[int, int, int]:
    """How far apart two versions are, component by component: orders candidates for ``closest``."""
    left_key, right_key = sort_key(left), sort_key(right)
    if left_key is None or right_key is None:
        raise ValueError(f"not versions: {left!r}, {right!r}")
    return (
        abs(left_key.major - right_key.major),
        abs(left_key.minor - right_key.minor),
        abs(left_key.patch - right_key.patch),
    )


def bump(old: str, new: str) -> str:
    """The kind of change from ``old`` to ``new``: major, minor, patch, prerelease, none, downgrade or unknown."""
    old_key, new_key = sort_key(old), sort_key(new)
    if old_key is None or new_key is None:
        return "unknown"
    order = new_key.compare(old_key)
    if order == 0:
        return "none"
    if order < 0:
        return "downgrade"
    if new_key.major != old_key.major:
        return "major"
    if new_key.minor != old_key.minor:
        return "minor"
    if new_key.patch != old_key.patch:
        return "patch"
    return "prerelease"


def previous_version(kept: list[str], version: str) -> str | None:
    """The highest of the ``kept`` versions below ``version``: what a new version is judged against."""
    if sort_key(version) is None:
        return None
    below = [candidate for candidate in kept if sort_key(candidate) and precedence(candidate) < precedence(version)]
    return max(below, key=precedence, default=None)
