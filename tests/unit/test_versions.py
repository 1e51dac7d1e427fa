"""Version ranges: npm syntax through node-semver, Ivy/Maven intervals translated to it."""

from __future__ import annotations

import pytest

from registry.descriptions.versions import (
    MAX_VERSION_CHARS,
    MAX_VERSION_DIGITS,
    RangeError,
    bump,
    maven_to_npm,
    normalise_version,
    parse_range,
    precedence,
    previous_version,
    satisfies,
    sort_key,
    version_order,
    version_problem,
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


HUGE = "9" * 4301


@pytest.mark.parametrize(
    ("version", "refused"),
    [
        ("1.2.3", False),
        ("1." + "9" * 18 + ".0", False),
        ("1." + "9" * 19 + ".0", True),
        ("1.0.0-rc." + "9" * 19, True),
        ("v" + "9" * 19, True),
        ("1.0.0-a" + "9" * 30, False),  # an alphanumeric identifier is never read as a number
        ("1.0.0+" + "x" * 250, False),
        ("1.0.0+" + "x" * 251, True),
        (f"1.{HUGE}.0", True),
    ],
)
def test_versions_are_bounded_in_length_and_digits(version: str, refused: bool) -> None:
    assert (version_problem(version) is not None) == refused
    assert len(version) <= MAX_VERSION_CHARS or refused


@pytest.mark.parametrize("version", [f"1.{HUGE}.0", f"1.0.0-{HUGE}", f"1.0.0-rc.{HUGE}", HUGE, "1." + "9" * 19])
def test_a_version_out_of_bounds_reads_as_no_version_everywhere(version: str) -> None:
    """Stored before the bounds were checked, it is compared as a text that is no version, never raises."""
    assert normalise_version(version) is None
    assert sort_key(version) is None
    assert not satisfies(version, "^1")
    assert bump("1.0.0", version) == "unknown"
    assert version_order(version)[0] == 1
    assert previous_version([version, "1.0.0"], "2.0.0") == "1.0.0"
    assert previous_version(["1.0.0"], version) is None
    with pytest.raises(RangeError):
        parse_range(f"[1.0,{version})")


def test_the_digit_bound_keeps_every_component_in_a_signed_64_bit_integer() -> None:
    assert int("9" * MAX_VERSION_DIGITS) < 2**63
