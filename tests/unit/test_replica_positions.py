"""The read replica's lag: a WAL insert position just past a page header counts as the page's start (where an idle
replica's replay stops after a WAL switch), any other position as itself."""

from __future__ import annotations

import pytest

from registry.store.replica import _record_boundary

SEGMENT = 16 * 2**20


@pytest.mark.parametrize(
    ("position", "boundary"),
    [
        (3 * SEGMENT + 40, 3 * SEGMENT),  # past the long header that starts a segment
        (3 * SEGMENT + 5 * 8192 + 24, 3 * SEGMENT + 5 * 8192),  # past a page's short header
        (3 * SEGMENT + 5 * 8192 + 120, 3 * SEGMENT + 5 * 8192 + 120),  # inside a page: a record's end
        (3 * SEGMENT + 5 * 8192, 3 * SEGMENT + 5 * 8192),
    ],
)
def test_a_position_past_a_page_header_is_the_page_start(position: int, boundary: int) -> None:
    assert _record_boundary(position) == boundary
