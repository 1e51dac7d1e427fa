"""How many descriptions a need's words match, estimated from PostgreSQL's own statistics, and the passes that pick
a need's full-text candidates by them.

A need's words are matched as "any of them" (registry/discovery/text.py), so one word in most descriptions matches
most of the catalogue. Reading and ranking every match costs in proportion to the catalogue, and reading only the
first matches in some order ranks an arbitrary share of them. So a need's candidates are read in passes:

1. the **selective** words: from the least frequent up, while the rows they are estimated to match together stay
   within ``SELECTIVE_ROWS``; every match of those is read (through the full-text index) and ranked;
2. only when the first pass brings fewer rows than asked for, the **common** words (the rest): at most
   ``TOP_UP_ROWS`` of their other matches, read through the full-text index too. Its entries for those words are
   as many as their matches, which for words in most of the catalogue is most of the cost: their matches are then
   taken from a sample of the table's pages (``TABLESAMPLE SYSTEM`` with a fixed seed: the same pages for the same
   table) sized to hold about ``SAMPLE_SURPLUS`` times as many as wanted, whose cost follows the words' share, not
   the catalogue. An order of the table is no way to a few matches: titles are named after their words, so a title
   order puts a word's matches together, and the table's own order holds the space of rows deleted or rewritten. A
   need with filters (kind, vendor, tenant …) reads the index, which the planner intersects with the filters': a
   sample would hold few of the rows they keep.

Every candidate is ranked on all the words, common ones included: "weather in Berlin" ranks the descriptions that
name Berlin and weather above those that name Berlin alone. Each word counts by its rarity (``rarity``): the sum
over the words of their own rank times their weight, so that a word in most descriptions ("server") adds little
beside a rare one ("Berlin"); before the table is first analysed every word weighs 1.

The frequencies are those ``ANALYZE`` gathers for the planner (``pg_stats.most_common_elems`` of the words column:
the lexemes in more than a small share of a sample of rows, with that share). A word not among them is rarer than
the least frequent of them and counts as selective. They are read at most every ``STATISTICS_TTL`` seconds per
process; the directory refreshes them after bulk loads and as the table changes (registry/store/statistics.py).

The rarity weight takes a word's share of the descriptions no higher than its share of the **owners** (the parties
that registered them; ``word_owner_shares``, counted from a sample by the same refresh and read in the same
statement): one party registering many descriptions holding a word raises that word's share, and so lowers its
weight in every other party's rankings, by at most one owner's worth. Which pass reads a word still follows its
share of the descriptions, which is what reading its matches costs (docs/decisions/0014).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import time
from collections.abc import Sequence

from sqlalchemy import text

from registry.store.database import Executor
from registry.store.statistics import WORDS_STATISTICS
from registry.store.tables import SEARCH_CONFIG

#: Rows the selective words of a need may be estimated to match together.
SELECTIVE_ROWS = 1000
#: Most rows the first pass reads, whatever the estimate said (statistics can be stale).
PASS_ROWS = 1000
#: Rows the second pass reads, over the common words.
TOP_UP_ROWS = 100
#: The common words' pass samples the table's pages when their matches M satisfy M² >= SAMPLE_FROM x TOP_UP_ROWS x
#: rows: reading M index entries then costs more than checking the SAMPLE_SURPLUS x TOP_UP_ROWS x rows / M rows of a
#: sample, an index entry costing about a tenth of a row checked (docs/decisions/0012).
SAMPLE_FROM = 20
#: How many times TOP_UP_ROWS matches a sample is sized to hold (its pages hold more or fewer by chance).
SAMPLE_SURPLUS = 2
#: The rarity weight of a word in a share s of the descriptions is (log s / log least) ** RARITY_POWER, least being
#: the least share listed: 1 for a word rarer than every listed one, less the more common it is.
RARITY_POWER = 8.0
#: Seconds the statistics are used before they are read again.
STATISTICS_TTL = 60.0

_STATISTICS = text(
    f"""
    SELECT stats.most_common_elems::text::text[] AS lexemes, stats.most_common_elem_freqs AS shares,
           (SELECT reltuples FROM pg_class WHERE oid = 'thing_summaries'::regclass) AS rows,
           owners.lexemes AS owner_lexemes, owners.shares AS owner_shares
    FROM (SELECT 1) AS one
    LEFT JOIN pg_stats AS stats ON {WORDS_STATISTICS}
    LEFT JOIN word_owner_shares AS owners ON owners.single
    """
)
#: The planner settings of the transaction that reads a need's passes: no table scan where an index serves. The
#: passes read matches through the full-text index, and with a LIMIT and no order the planner would rather scan the
#: table, which for a rare word reads all of it (set with the transaction's BEGIN: no round trip of its own).
NEED_PLANNER = "SET LOCAL enable_seqscan = off"
#: The lexeme of each word, as the text search configuration stems it (NULL for a stop word).
_LEXEMES = text(
    f"""
    SELECT (tsvector_to_array(to_tsvector('{SEARCH_CONFIG}'::regconfig, word.text)))[1]
    FROM unnest(CAST(:words AS text[])) WITH ORDINALITY AS word (text, position)
    ORDER BY word.position
    """
)
#: Words whose lexemes a process keeps (the text search configuration does not change while it runs).
KEPT_LEXEMES = 10_000


@dataclasses.dataclass(frozen=True, slots=True)
class Frequencies:
    """The lexemes in more than a small share of the descriptions, sorted, with that share; ``least``: the least
    share listed (a lexeme not listed is in fewer); ``rows``: descriptions in the table (estimated; 0 unknown);
    ``weighed``: the share each lexeme's rarity weight is taken from, its share of the descriptions bounded by its
    share of the owners (empty: the shares of the descriptions)."""

    lexemes: tuple[str, ...] = ()
    shares: tuple[float, ...] = ()
    least: float = 0.0
    rows: float = 0.0
    weighed: tuple[float, ...] = ()

    @classmethod
    def of(
        cls,
        lexemes: Sequence[str] | None,
        shares: Sequence[float] | None,
        rows: float | None,
        owner_lexemes: Sequence[str] | None = None,
        owner_shares: Sequence[float] | None = None,
    ) -> Frequencies:
        """From ``pg_stats`` (``shares`` ends with the least, greatest share and the share of empty rows) and the
        owners' shares of the lexemes counted (``word_owner_shares``; a lexeme not counted keeps its share)."""
        if not lexemes or not shares or len(shares) < len(lexemes) + 1:
            return cls(rows=max(0.0, rows or 0.0))
        pairs = sorted(zip(lexemes, shares, strict=False))
        return cls(
            lexemes=tuple(lexeme for lexeme, _ in pairs),
            shares=tuple(share for _, share in pairs),
            least=float(shares[len(lexemes)]),
            rows=max(0.0, rows or 0.0),
            weighed=_weighed(pairs, dict(zip(owner_lexemes or (), owner_shares or (), strict=False))),
        )

    def share(self, lexeme: str, prefix: bool) -> float | None:
        """The share of descriptions holding ``lexeme`` (or, ``prefix``, a lexeme starting with it: the sum of
        theirs, as the planner estimates it, at most 1); None when it is not among the frequent ones."""
        return self._summed(self.shares, lexeme, prefix)

    def weighed_share(self, lexeme: str, prefix: bool) -> float | None:
        """The share ``lexeme``'s rarity weight is taken from (as ``share``, each lexeme's bounded by its owners')."""
        return self._summed(self.weighed or self.shares, lexeme, prefix)

    def _summed(self, shares: tuple[float, ...], lexeme: str, prefix: bool) -> float | None:
        start = bisect.bisect_left(self.lexemes, lexeme)
        if not prefix:
            found = start < len(self.lexemes) and self.lexemes[start] == lexeme
            return shares[start] if found else None
        end = start
        while end < len(self.lexemes) and self.lexemes[end].startswith(lexeme):
            end += 1
        return min(1.0, sum(shares[start:end])) if end > start else None


def _weighed(pairs: Sequence[tuple[str, float]], owners: dict[str, float]) -> tuple[float, ...]:
    """The bounded share of each of ``pairs`` (lexeme, share of descriptions) by its share of ``owners``."""
    return tuple(bounded(share, owners.get(lexeme)) for lexeme, share in pairs)


def bounded(rows: float, owners: float | None) -> float:
    """A word's share for its rarity weight: its share of the descriptions (``rows``), at most its share of the
    owners (None: not counted). Many descriptions of one owner then count as that one owner does."""
    return rows if owners is None else min(rows, owners)


@dataclasses.dataclass(frozen=True, slots=True)
class Passes:
    """The ``to_tsquery`` texts of a need's passes: its selective words and its common words (None: none); and the
    share of the table's pages (percent) the common words' pass samples rather than read their index entries."""

    selective: str | None
    common: str | None
    sample: float | None = None
    #: Each word's ``to_tsquery`` text with its rarity weight (0..1), which the candidates are ranked by; empty: rank
    #: on all the words alike.
    weights: tuple[tuple[str, float], ...] = ()


def passes(terms: Sequence[tuple[str, str | None]], frequencies: Frequencies, prefix_from: int) -> Passes:
    """The passes of ``terms`` (each a word and its lexeme, None for a stop word): words are taken from the least
    frequent up into the selective pass while the rows their union is estimated to match (shares taken as
    independent) stay within ``SELECTIVE_ROWS``; words not among the frequent ones always are. A catalogue of at
    most ``SELECTIVE_ROWS`` descriptions has every word in the first pass. Words of ``prefix_from`` letters or more
    match as prefixes."""
    selective, shared = _listed_apart(terms, frequencies, prefix_from)
    common = _taken_while_selective(sorted(shared), selective, frequencies.rows)
    matches = (1.0 - math.prod(1.0 - share for share, _ in common)) * frequencies.rows
    return Passes(
        selective=" | ".join(selective) or None,
        common=" | ".join(query for _, query in common) or None,
        sample=_sample_percent(matches, frequencies.rows) if common else None,
    )


def _listed_apart(
    terms: Sequence[tuple[str, str | None]], frequencies: Frequencies, prefix_from: int
) -> tuple[list[str], list[tuple[float, int, str]]]:
    """The ``to_tsquery`` texts of the words that are selective whatever their company (not among the frequent
    ones, or every word of a small catalogue), and the others with their share and position; stop words left out."""
    selective: list[str] = []
    shared: list[tuple[float, int, str]] = []
    for position, (word, lexeme) in enumerate(terms):
        if lexeme is None:
            continue
        query, prefix = _term_query(word, prefix_from)
        share = frequencies.share(lexeme, prefix)
        if share is None or frequencies.rows <= SELECTIVE_ROWS:
            selective.append(query)
        else:
            shared.append((share, position, query))
    return selective, shared


def _taken_while_selective(
    shared: Sequence[tuple[float, int, str]], selective: list[str], rows: float
) -> list[tuple[float, str]]:
    """Moves the least frequent of ``shared`` (sorted by share) into ``selective`` while the rows their union is
    estimated to match stay within ``SELECTIVE_ROWS``; the rest, with their shares, are the common words."""
    missing = 1.0  # the share of descriptions matching none of the selective words taken so far
    common: list[tuple[float, str]] = []
    for share, _, query in shared:
        if not common and (1.0 - missing * (1.0 - share)) * rows <= SELECTIVE_ROWS:
            missing *= 1.0 - share
            selective.append(query)
        else:
            common.append((share, query))
    return common


def _term_query(word: str, prefix_from: int) -> tuple[str, bool]:
    """``word``'s ``to_tsquery`` text, and whether it matches as a prefix (``prefix_from`` letters or more)."""
    prefix = len(word) >= prefix_from
    return (f"{word}:*" if prefix else word), prefix


def _sample_percent(matches: float, rows: float) -> float | None:
    """The share of the table's pages (percent) whose rows hold about ``SAMPLE_SURPLUS`` x ``TOP_UP_ROWS`` of the
    common words' ``matches``; None while reading their index entries costs less (see the module's docstring)."""
    if matches <= 0 or matches * matches < SAMPLE_FROM * TOP_UP_ROWS * rows:
        return None
    return min(100.0, 100.0 * SAMPLE_SURPLUS * TOP_UP_ROWS / matches)


class WordStatistics:
    """The statistics of the words column, read at most every ``STATISTICS_TTL`` seconds, and the lexemes of the
    words of needs (up to ``KEPT_LEXEMES`` words, then forgotten all at once)."""

    def __init__(self, ttl: float = STATISTICS_TTL) -> None:
        self.ttl = ttl
        self._frequencies: Frequencies | None = None
        self._read_at = -math.inf
        self._lexemes: dict[str, str | None] = {}

    async def lexemes(self, executor: Executor, words: Sequence[str]) -> list[str | None]:
        """The lexeme of each of ``words`` (None for a stop word); those not kept in one statement."""
        missing = [word for word in dict.fromkeys(words) if word not in self._lexemes]
        if missing:
            if len(self._lexemes) + len(missing) > KEPT_LEXEMES:
                self._lexemes.clear()
            self._lexemes.update(zip(missing, await lexemes(executor, missing), strict=True))
        return [self._lexemes[word] for word in words]

    async def frequencies(self, executor: Executor) -> Frequencies:
        now = time.monotonic()
        if self._frequencies is None or now - self._read_at >= self.ttl:
            row = await executor.fetchrow(_STATISTICS)
            self._frequencies = (
                Frequencies()
                if row is None
                else Frequencies.of(
                    row["lexemes"], row["shares"], row["rows"], row["owner_lexemes"], row["owner_shares"]
                )
            )
            self._read_at = now
        return self._frequencies

    def forget(self) -> None:
        """Read the statistics again at the next need (the directory's statistics refresh has analysed the words)."""
        self._frequencies = None


async def lexemes(executor: Executor, words: Sequence[str]) -> list[str | None]:
    """The lexeme of each of ``words`` (None for a stop word)."""
    if not words:
        return []
    return [row[0] for row in await executor.fetch(_LEXEMES, words=list(words))]


def rarity(share: float | None, least: float) -> float:
    """The rarity weight of a word in ``share`` of the descriptions (None: not among the frequent ones)."""
    if share is None or not 0.0 < least < 1.0:
        return 1.0
    if share >= 1.0:
        return 0.0
    return min(1.0, float((math.log(share) / math.log(least)) ** RARITY_POWER))


def weights(
    terms: Sequence[tuple[str, str | None]], frequencies: Frequencies, prefix_from: int
) -> tuple[tuple[str, float], ...]:
    """The ``to_tsquery`` text and rarity weight of each of ``terms`` that is not a stop word."""
    chosen: list[tuple[str, float]] = []
    for word, lexeme in terms:
        if lexeme is None:
            continue
        query, prefix = _term_query(word, prefix_from)
        chosen.append((query, rarity(frequencies.weighed_share(lexeme, prefix), frequencies.least)))
    return tuple(chosen)


async def need_passes(executor: Executor, statistics: WordStatistics, words: Sequence[str], prefix_from: int) -> Passes:
    """The passes of a need's ``words``, with their rarity weights: one pass of them all while the catalogue is
    small enough for every match to be read."""
    frequencies = await statistics.frequencies(executor)
    if not words:
        return passes([], frequencies, prefix_from)
    terms = list(zip(words, await statistics.lexemes(executor, words), strict=True))
    rated = weights(terms, frequencies, prefix_from)
    if frequencies.rows <= SELECTIVE_ROWS:
        every = [(word, word) for word in words]  # a stop word is left out by to_tsquery itself
        return dataclasses.replace(passes(every, Frequencies(rows=frequencies.rows), prefix_from), weights=rated)
    return dataclasses.replace(passes(terms, frequencies, prefix_from), weights=rated)


__all__ = [
    "KEPT_LEXEMES",
    "NEED_PLANNER",
    "PASS_ROWS",
    "SELECTIVE_ROWS",
    "STATISTICS_TTL",
    "TOP_UP_ROWS",
    "Frequencies",
    "Passes",
    "WordStatistics",
    "bounded",
    "lexemes",
    "need_passes",
    "passes",
]
