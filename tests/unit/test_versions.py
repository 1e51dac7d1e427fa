"""Version ranges: npm syntax through node-semver, Ivy/Maven intervals translated to it."""

from __future__ import annotations

import pytest

from registry.descriptions.versions import (
    RangeError,
    bump,
    maven_to_npm,
    normalise_version,
    parse_range,
    precedence,
    satisfies,
    version_order,
)


@pytest.mark.parametrize(
    ("maven", "npm"),
    [
        ("[1.0,2.0)", ">=1.0.0 <2.0.0"),
        ("[1.0,2.0]", ">=1.0.0 <=2.0.0"),
        ("(1.0,2.0)", ">1.0.0 <2.0.0"),
        ("]1.0,2.0[", ">1.0.0 <2.0.0"),
        ("[1.5]", "=1.5.0"),
        ("(,2.0)", "<2.0.0"),
        ("[1.0,)", ">=1.0.0"),
        ("[1,2),[3,4)", ">=1.0.0 <2.0.0 || >=3.0.0 <4.0.0"),
    ],
)
def test_maven_ranges_translate_to_npm(maven: str, npm: str) -> None:
    assert maven_to_npm(maven) == npm


@pytest.mark.parametrize(
    ("version_range", "inside", "outside"),
    [
        ("^1.2", ["1.2.0", "1.9.9"], ["1.1.9", "2.0.0"]),
        ("~1.2.3", ["1.2.3", "1.2.9"], ["1.3.0", "1.2.2"]),
        (">=1 <2", ["1.0.0", "1.99.0"], ["2.0.0", "0.9.0"]),
        ("1.x", ["1.0.0", "1.5.2"], ["2.0.0"]),
        ("[1.0,2.0)", ["1.0.0", "1.9.0"], ["2.0.0", "0.9.9"]),
        ("(1.0,2.0]", ["1.0.1", "2.0.0"], ["1.0.0", "2.0.1"]),
        ("*", ["0.0.1", "9.9.9"], []),
    ],
)
def test_range_syntaxes(version_range: str, inside: list[str], outside: list[str]) -> None:
    assert all(satisfies(version, version_range) for version in inside)
    assert not any(satisfies(version, version_range) for version in outside)


def test_short_versions_are_completed() -> None:
    assert normalise_version("1.2") == "1.2.0"
    assert normalise_version("v2") == "2.0.0"
    assert normalise_version("1.2.3-rc.1") == "1.2.3-rc.1"
    assert normalise_version("latest") is None
    assert satisfies("1.2", "^1.0")
    assert not satisfies("latest", "*")


@pytest.mark.parametrize("text", ["", "abc", ">=>", "[1.0", "[a,b)", "(1.0]"])
def test_bad_ranges_are_refused(text: str) -> None:
    with pytest.raises(RangeError):
        parse_range(text)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("1.2.3", "2.0.0", "major"),
        ("1.2.3", "1.3.0", "minor"),
        ("1.2.3", "1.2.4", "patch"),
        ("1.2.3-rc.1", "1.2.3", "prerelease"),
        ("1.2.3", "1.2.3", "none"),
        ("1.2.3", "1.2.0", "downgrade"),
        ("1.2.3", "next", "unknown"),
    ],
)
def test_bump(old: str, new: str, expected: str) -> None:
    assert bump(old, new) == expected


def test_precedence_follows_semver() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0",
        "1.2",
        "1.10.0",
    ]
    assert sorted(reversed(ordered), key=precedence) == ordered


def test_version_order_is_semantic_then_text() -> None:
    versions = ["1.2.17", "1.2.9", "v2", "1.10.0-rc.1", "banana", "1.10.0", "1.2.9-alpha"]
    assert sorted(versions, key=version_order) == [
        "1.2.9-alpha",
        "1.2.9",
        "1.2.17",
        "1.10.0-rc.1",
        "1.10.0",
        "v2",
        "banana",
    ]
