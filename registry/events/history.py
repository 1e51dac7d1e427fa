"""A description's document before and after a change, rebuilt from the change log.

Filtered subscriptions need them: an update or delete event carries no document, and a subscriber watching
"providers of X" must hear that a provider changed or left even when the new version no longer matches.
"""

from __future__ import annotations

import collections
import copy
from typing import Any

import json_merge_patch

from registry.store.changes import Change, document_history
from registry.store.database import Executor
from registry.store.things import THING_CREATED, THING_DELETED, THING_TRANSFERRED

Document = dict[str, Any]


def apply_change(document: Document | None, change_type: str, diff: Any) -> Document | None:
    """The document after a change, given the document before it (None if there was none)."""
    if change_type == THING_CREATED:
        return dict(diff) if isinstance(diff, dict) else None
    if change_type == THING_DELETED or document is None:
        return None
    if change_type == THING_TRANSFERRED:
        return document
    # merge() edits nested objects in place; the state before the change must survive it.
    result: Document = json_merge_patch.merge(copy.deepcopy(document), diff)
    return result


class DocumentStates:
    """Rebuilds states for changes seen in sequence order (per id: a change committed late is of an id no later change
    touched, writes to one id being serialised); remembers the latest state of recent ids."""

    def __init__(self, executor: Executor, cache_size: int = 10_000) -> None:
        self.executor = executor
        self.cache_size = cache_size
        self._latest: collections.OrderedDict[str, tuple[int, Document | None]] = collections.OrderedDict()

    def forget(self) -> None:
        """Call when changes were not passed through ``states`` (the cache may be stale)."""
        self._latest.clear()

    async def states(self, change: Change) -> tuple[Document | None, Document | None]:
        cached = self._latest.get(change.thing_id)
        if change.type == THING_CREATED:
            before = None
        elif cached is not None and cached[0] < change.seq:
            before = cached[1]
        else:
            before = await self._rebuild(change.thing_id, change.seq - 1)
        after = apply_change(before, change.type, change.diff)
        if cached is not None and cached[0] > change.seq:
            return before, after  # a change delivered late: the cached state is newer
        self._latest[change.thing_id] = (change.seq, after)
        self._latest.move_to_end(change.thing_id)
        if len(self._latest) > self.cache_size:
            self._latest.popitem(last=False)
        return before, after

    async def _rebuild(self, thing_id: str, seq: int) -> Document | None:
        history = await document_history(self.executor, thing_id, seq)
        document: Document | None = None
        for _, change_type, diff in history:
            document = apply_change(document, change_type, diff)
        return document


__all__ = ["DocumentStates", "apply_change"]
