"""The directory as it was before ids and versions were checked, to store the rows old versions stored."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import pytest

#: What the RDF converter accepted as an IRI before it wrote only IRIs a strict parser reads.
OLD_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>\"{}|^`\\]*\Z")
#: An id stored before ids were checked whose RDF no strict parser reads (``%zz`` is no percent-encoding).
UNLOADABLE_ID = "urn:test:legacy:a%zz"
#: Ids stored before ids were checked: control characters, characters an IRI cannot hold.
LEGACY_IDS = [UNLOADABLE_ID, "urn:test:legacy:a\nb", "urn:test:legacy:a{b}", "urn:test:legacy:a b"]


@contextlib.contextmanager
def as_before_the_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The directory as it was before ids and versions were checked: no id rule, no version bounds, and an RDF
    converter that writes whatever looks like an absolute IRI. What it stores is what old rows hold."""
    with monkeypatch.context() as patched:
        patched.setattr("registry.errors.id_problem", lambda value: None)
        patched.setattr("registry.descriptions.validation.version_problem", lambda value: None)
        patched.setattr("registry.conventions.mcp.version_problem", lambda value: None)
        patched.setattr("registry.semantic.compiled.is_iri", lambda value: OLD_ABSOLUTE.match(value) is not None)
        yield
