"""Positions in the change feed, and the event ids that carry them.

Sequences are taken before commit, so a change may commit after later ones have been delivered (a transaction
held up by a lock, a replica frozen mid-transaction). The feed then delivers it late, when it commits. A stream's
position is therefore not one sequence but ``(high, pending)``: every committed change up to ``high`` has been
delivered except those of the ``pending`` sequences, which were not committed yet when later ones went out.

Each event's id names the change's sequence and, when they differ from the plain case, that position, so that
resuming with ``Last-Event-ID`` sends exactly what the stream had not delivered (the late commits below the id
too) on any replica:

- ``S``: the change ``S``, delivered with every committed change before it (the usual case);
- ``S/H/P``: the change ``S`` at position ``(H, P)``, ``P`` the pending sequences as comma-separated ranges
  (``7-9,12``; empty when none is left). ``S`` is below ``H`` when ``S`` itself committed late.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

#: Ranges an event id lists at most. Beyond (dozens of transactions stuck at once), the highest ones are merged into
#: one range covering them: the id then claims some delivered changes as pending, and a stream resumed from it gets
#: those again (never fewer).
MAX_RANGES = 64

_RANGE = r"\d{1,19}(?:-\d{1,19})?"
_EVENT_ID = re.compile(rf"(\d{{1,19}})(?:/(\d{{1,19}})/((?:{_RANGE})(?:,{_RANGE}){{0,{MAX_RANGES - 1}}})?)?")

Span = tuple[int, int]


@dataclasses.dataclass(frozen=True, slots=True)
class Position:
    """Every committed change up to ``high`` delivered, but those in the ``pending`` ranges (inclusive, ascending,
    all below ``high``)."""

    high: int
    pending: tuple[Span, ...] = ()

    @classmethod
    def of(cls, high: int, pending: Iterable[int]) -> Position:
        return cls(high, _spans(seq for seq in pending if seq < high))

    def covers(self, seq: int) -> bool:
        """Whether a stream at this position has had change ``seq`` (or it never was committed)."""
        # On the path of every change to every subscriber: the usual answers first.
        if seq > self.high:
            return False
        return not self.pending or not any(first <= seq <= last for first, last in self.pending)

    def without(self, seq: int) -> Position:
        """This position once change ``seq`` (pending) has been delivered too."""
        spans: list[Span] = []
        for first, last in self.pending:
            if first <= seq <= last:
                spans += [span for span in ((first, seq - 1), (seq + 1, last)) if span[0] <= span[1]]
            else:
                spans.append((first, last))
        return Position(self.high, tuple(spans))

    def below(self, high: int) -> Position:
        """The position ``high`` with the pending ranges of this one below it (``high`` at most this one's)."""
        spans = tuple((first, min(last, high - 1)) for first, last in self.pending if first < high)
        return Position(high, spans)

    def event_id(self, seq: int) -> str:
        """The id of the event of change ``seq`` delivered at this position."""
        if seq == self.high and not self.pending:
            return str(seq)
        ranges = ",".join(str(first) if first == last else f"{first}-{last}" for first, last in self.pending)
        return f"{seq}/{self.high}/{ranges}"


def parse_event_id(text: str) -> tuple[int, Position]:
    """(the change's sequence, the position) an event id names; ValueError for anything else."""
    match = _EVENT_ID.fullmatch(text.strip())
    if match is None:
        raise ValueError(text)
    seq = int(match[1])
    if match[2] is None:
        return seq, Position(seq)
    high = int(match[2])
    spans: list[Span] = []
    for part in match[3].split(",") if match[3] else ():
        first, _, last = part.partition("-")
        span = (int(first), int(last or first))
        if not span[0] <= span[1] < high or (spans and span[0] <= spans[-1][1]):
            raise ValueError(text)
        spans.append(span)
    return seq, Position(high, tuple(spans))


def _spans(seqs: Iterable[int]) -> tuple[Span, ...]:
    spans: list[list[int]] = []
    for seq in sorted(seqs):
        if spans and seq == spans[-1][1] + 1:
            spans[-1][1] = seq
        else:
            spans.append([seq, seq])
    if len(spans) > MAX_RANGES:
        spans[MAX_RANGES - 1 :] = [[spans[MAX_RANGES - 1][0], spans[-1][1]]]
    return tuple((first, last) for first, last in spans)


__all__ = ["MAX_RANGES", "Position", "Span", "parse_event_id"]
