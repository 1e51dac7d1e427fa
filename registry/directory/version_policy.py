"""Version policy at write time: a registration is compared with the versions kept for its id.

Three things a registrant must hear about, because resolvers and callers trust version numbers:

- ``version-content-changed``: the version is already kept with other content. Kept versions are immutable
  (``/versions`` keeps the first registration), so the change needs a new version.
- ``version-downgrade``: the version is lower than the one of the description it replaces.
- ``version-bump-too-small``: the changes since the highest kept version below it need a larger bump (a removed
  action under a minor bump).

``warn`` (default) accepts the write and reports these as ``Registry-Notices``; ``enforce`` refuses it with 409 and
the changes that require a higher version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from registry.auth.tenancy import TenantScope
from registry.descriptions.compatibility import compare_documents
from registry.descriptions.summary import version_of
from registry.descriptions.versions import bump, previous_version
from registry.errors import Conflict
from registry.store.catalog import CatalogStore
from registry.store.database import Transaction
from registry.store.things import StoredDescription
from registry.wire import Change, Notice

WARN = "warn"
ENFORCE = "enforce"
POLICIES = (WARN, ENFORCE)
#: Changes named in a notice (the 409 problem lists them all).
NOTICE_CHANGES = 3

#: (id, version) → the text kept for that version of that id.
KeptTexts = dict[tuple[str, str], str]


def kept_for(kept: Sequence[tuple[str, str | None]], writers: TenantScope) -> list[str]:
    """The kept versions (of :meth:`VersionPolicy.kept`) that ``writers`` may see: another tenant's kept versions
    play no part in a write, so that no notice or 409 tells of them."""
    return [version for version, tenant in kept if writers.sees(tenant)]


class VersionPolicy:
    def __init__(self, mode: str) -> None:
        if mode not in POLICIES:
            raise ValueError(f"version policy must be one of {', '.join(POLICIES)}, got {mode!r}")
        self.mode = mode

    @staticmethod
    async def kept(tx: Transaction, thing_ids: Sequence[str]) -> dict[str, list[tuple[str, str | None]]]:
        """The versions kept for each of ``thing_ids`` with the tenant that registered each (ids without any are
        left out), read once for a batch; :func:`kept_for` picks those a writer is compared with."""
        found: dict[str, list[tuple[str, str | None]]] = {}
        for thing_id, version, tenant in await CatalogStore.kept_versions(tx, thing_ids):
            found.setdefault(thing_id, []).append((version, tenant))
        return found

    @staticmethod
    def compared_with(version: str | None, kept: list[str]) -> str | None:
        """The kept version :meth:`check` compares a document declaring ``version`` with (None: none), to read
        their texts at once."""
        if version is None or not kept:
            return None
        return version if version in kept else previous_version(kept, version)

    @staticmethod
    async def forget(tx: Transaction, thing_ids: Sequence[str]) -> None:
        """Drop the versions kept for ``thing_ids``: those of a holder whose id its rightful party took over
        (registry/auth/ownership.py), which are not that party's history."""
        await CatalogStore.forget_versions(tx, thing_ids)

    @staticmethod
    async def texts(tx: Transaction, wanted: Sequence[tuple[str, str]]) -> KeptTexts:
        """The kept texts of ``wanted`` (id, version) pairs, read once for a batch."""
        if not wanted:
            return {}
        return await CatalogStore.kept_texts(tx, wanted)

    def check(
        self,
        thing_id: str,
        current: StoredDescription | None,
        document: dict[str, Any],
        text: str,
        kept: list[str],
        texts: KeptTexts,
        *,
        version: str | None,
    ) -> list[Notice]:
        """Notices for writing ``document`` (encoded: ``text``, declaring ``version``: :func:`version_of`) over
        ``current`` (None: a new id), given the versions
        ``kept`` for the id (:meth:`kept`) and the ``texts`` of those it is compared with (:meth:`compared_with`,
        :meth:`texts`); raises Conflict under ``enforce``. Runs under the id's lock, so two writes of one version
        cannot both pass."""
        if version is None or not kept:
            return []
        if version in kept:
            return self._content_changed(version, document, text, texts[(thing_id, version)])
        return [
            *self._downgrade(version, current),
            *self._bump_too_small(thing_id, version, document, kept, texts),
        ]

    def _content_changed(self, version: str, document: dict[str, Any], text: str, kept_text: str) -> list[Notice]:
        """``version-content-changed``: a kept version registered again, unless with its content."""
        if kept_text == text:
            return []
        kept_document = msgspec.json.decode(kept_text)
        if kept_document == document:  # the same content, members in another order
            return []
        report = compare_documents(kept_document, document, version, version)
        changes = (
            f"{report.verdict}, {len(report.changes)} change(s){_first(report.changes)}"
            if report.changes
            else "no change to the contract"
        )
        needed = "patch" if report.required_bump == "none" else report.required_bump
        return self._refuse_or_warn(
            "version-content-changed",
            f"version {version} is already registered with other content ({changes}); /versions keeps the "
            f"first registration of {version}; register the change as a new {needed} version",
            report.changes,
        )

    def _downgrade(self, version: str, current: StoredDescription | None) -> list[Notice]:
        """``version-downgrade``: a version lower than the one of the description it replaces."""
        current_version = None if current is None else version_of(current.document())
        if current_version is None or bump(current_version, version) != "downgrade":
            return []
        return self._refuse_or_warn(
            "version-downgrade",
            f"version {version} is lower than {current_version}, the version it replaces; resolvers asking for "
            f"the highest version in a range may now pick another provider",
            [],
        )

    def _bump_too_small(
        self, thing_id: str, version: str, document: dict[str, Any], kept: list[str], texts: KeptTexts
    ) -> list[Notice]:
        """``version-bump-too-small``: the changes since the highest kept version below it need a larger bump."""
        previous = previous_version(kept, version)
        if previous is None:
            return []
        old = msgspec.json.decode(texts[(thing_id, previous)])
        report = compare_documents(old, document, previous, version)
        if report.honest is not False:
            return []
        required = [change for change in report.changes if change.bump == report.required_bump]
        return self._refuse_or_warn(
            "version-bump-too-small",
            f"{previous} → {version} is a {report.declared_bump} bump, but the changes need a "
            f"{report.required_bump} bump{_first(required)}",
            required,
        )

    def _refuse_or_warn(self, code: str, message: str, changes: list[Change]) -> list[Notice]:
        if self.mode == ENFORCE:
            raise Conflict(
                f"{message} (REGISTRY_VERSION_POLICY=enforce)",
                code=code,
                changes=msgspec.to_builtins(changes),
            )
        return [Notice(code=code, message=message, field="version.instance")]


def _first(changes: list[Change]) -> str:
    if not changes:
        return ""
    shown = "; ".join(f"{change.kind} at {change.pointer}" for change in changes[:NOTICE_CHANGES])
    more = f" and {len(changes) - NOTICE_CHANGES} more" if len(changes) > NOTICE_CHANGES else ""
    return f": {shown}{more}"


__all__ = ["ENFORCE", "POLICIES", "WARN", "VersionPolicy"]
