"""A search word's hits, scored as whoosh scores them, from each term's postings read once.

whoosh answers a query by walking a tree of matchers, several Python calls per posting and
per node: about 6 µs a hit, 15.7 ms for `py` (2,661 packages of a 1M-spec tag), 1.6 ms for
`torch` and its prefixes and typos (88). Yet a term's BM25F score of a document does not
depend on the query (a boost multiplies it), and a tag's text index never changes once
built. So each term's postings and scores are read from whoosh once (`_postings`, at most
one entry per term of the index), and a query's `Or` and `And` are merges of those sorted
arrays with numpy: their cost follows the postings met, not the index's size.

The sums are whoosh's, to the bit: a document's score is the same floats added in the same
order. whoosh adds the subqueries of an `Or` in a Huffman-like tree by estimated size (ties
keep their order: its matchers compare equal), or, for more than two subqueries in an index
of at most 5,000 documents, one after another into an array (then only positive sums
match); an `And` adds in a tree by negated size; a boost multiplies. A union adds each
side's scores into zeros (0.0 plus a score is that score). `tests/test_term_scores.py`
compares every hit and score with whoosh's own search.

Only what `TextIndex` asks is evaluated: terms, `Or` and `And` with their boosts, in a
one-segment index (the build writes one; `TextIndex` asks whoosh for any other).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from whoosh.query import And, Or, Query, Term

from cachegql.index.disk.sorted_ids import sorted_intersection, sorted_union

__all__ = ["Hits", "TermScores"]

ARRAY_UNION_MAX_DOCS = 5_000
"""whoosh's `Or` adds more than two subqueries into an array in an index this small."""
TOO_MANY_CLAUSES = Or.TOO_MANY_CLAUSES
SEARCHED_FIELDS = ("words", "exact")
"""The fields `TextIndex` queries (both text: their terms are UTF-8)."""

Hits = list[tuple[float, int]]
"""(score, document number), best first, ties by number: whoosh's `top_n`."""
_Postings = tuple[np.ndarray, np.ndarray]
"""Document numbers, ascending and distinct, and their scores."""
_NONE: _Postings = (np.zeros(0, dtype=np.intp), np.zeros(0))


class TermScores:
    """The scored hits of queries over one atomic whoosh index; safe to share between
    threads (each reads postings through its own searcher)."""

    def __init__(self, searcher: Callable[[], Any]) -> None:
        self._searcher = searcher
        reader = searcher().reader()
        self._count_all = int(reader.doc_count_all())
        self._count = int(reader.doc_count())
        # Every term of the searched fields: one not held matches nothing (no lookup).
        self._held = frozenset(
            (field, text.decode()) for field in SEARCHED_FIELDS for text in reader.lexicon(field)
        )
        self._postings: dict[tuple[str, str], _Postings] = {}

    def hits(self, query: Query) -> Hits:
        """The documents `query` matches, with their scores, best first."""
        docs, scores = self.ranked(query)
        return list(zip(scores.tolist(), docs.tolist(), strict=True))

    def ranked(self, query: Query) -> _Postings:
        """`hits` as two arrays, documents and scores, best first: a caller that reads
        them as arrays makes no Python tuple per hit (`py`'s 2,661 tuples: 150 µs)."""
        docs, scores = self._evaluate(query)
        order = np.lexsort((docs, -scores))
        return docs[order], scores[order]

    def candidates(self, query: Query) -> np.ndarray | None:
        """The documents `hits` may match, ascending, found without scoring: a term's, an
        `Or`'s union, an `And`'s intersection (`hits` matches these, but for a document
        whose scores sum to 0 or less in an array union). None when a term the index
        holds has postings not read yet: this never reads the index (its caller runs on
        the event loop, and reading a term's postings the first time costs ~6 µs a
        posting)."""
        if isinstance(query, Term):
            key = (query.fieldname, query.text)
            known = self._postings.get(key)
            if known is None:
                return None if key in self._held else _NONE[0]
            return known[0]
        if type(query) not in (Or, And):
            raise TypeError(f"not a query TermScores evaluates: {type(query).__name__}")
        docs = []
        for sub in query.subqueries:
            found = self.candidates(sub)
            if found is None:
                return None
            docs.append(found)
        if not docs:
            return _NONE[0]
        if isinstance(query, And):
            return functools.reduce(sorted_intersection, docs)
        return sorted_union(docs)

    def _evaluate(self, query: Query) -> _Postings:
        if isinstance(query, Term):
            docs, scores = self._term_postings(query)
            return docs, scores * query.boost if query.boost != 1.0 else scores
        if type(query) not in (Or, And):
            raise TypeError(f"not a query TermScores evaluates: {type(query).__name__}")
        subs = list(query.subqueries)
        if not subs:
            return _NONE
        if len(subs) == 1:  # whoosh uses the one subquery's matcher, without the boost
            return self._evaluate(subs[0])
        if isinstance(query, And):
            docs, scores = self._tree(subs, [0 - self._size(s) for s in subs], _intersect)
        elif len(subs) >= TOO_MANY_CLAUSES or (
            len(subs) != 2 and self._count_all <= ARRAY_UNION_MAX_DOCS
        ):
            return self._array_union(subs, query.boost)
        else:
            docs, scores = self._tree(subs, [self._size(s) for s in subs], _union)
        return docs, scores * query.boost if query.boost != 1.0 else scores

    def _tree(
        self,
        subs: list[Query],
        weights: list[int],
        join: Callable[[_Postings, _Postings], _Postings],
    ) -> _Postings:
        """`whoosh.util.make_weighted_tree`: the two lightest joined first, the join put
        back after the entries of its weight (equal entries keep their order)."""
        evaluated = [self._evaluate(sub) for sub in subs]
        entries = sorted(zip(weights, range(len(subs)), evaluated, strict=True), key=_order)
        serial = len(entries)
        while len(entries) > 1:
            (weight_a, _, a), (weight_b, _, b) = entries.pop(0), entries.pop(0)
            joined = (weight_a + weight_b, serial, join(a, b))
            serial += 1
            bisect.insort(entries, joined, key=_order)
        return entries[0][2]

    def _array_union(self, subs: list[Query], boost: float) -> _Postings:
        """whoosh's `ArrayUnionMatcher`: each subquery's scores, times the boost, added in
        order from 0.0; what sums to more than 0 matches."""
        evaluated = [self._evaluate(sub) for sub in subs]
        docs = sorted_union([d for d, _ in evaluated])
        total = np.zeros(len(docs))
        for sub_docs, scores in evaluated:
            total[np.searchsorted(docs, sub_docs)] += scores * boost
        positive = total > 0
        return docs[positive], total[positive]

    def _size(self, query: Query) -> int:
        """whoosh's `estimate_size`: a term's document frequency, an `Or`'s sum (at most
        the index's documents), an `And`'s smallest."""
        if isinstance(query, Term):
            return len(self._term_postings(query)[0])
        sizes = [self._size(sub) for sub in query.subqueries]
        if isinstance(query, And):
            return min(sizes)
        return min(sum(sizes), self._count)

    def _term_postings(self, term: Term) -> _Postings:
        """A term's documents and unboosted scores, as whoosh's matcher gives them; none
        for a term the index does not hold (whoosh's null matcher), which is not kept:
        only the index's own terms are, so the memory is bounded by its vocabulary."""
        key = (term.fieldname, term.text)
        known = self._postings.get(key)
        if known is not None:
            return known
        if key not in self._held:
            return _NONE
        searcher = self._searcher()
        text = searcher.schema[term.fieldname].to_bytes(term.text)
        docs: list[int] = []
        scores: list[float] = []
        matcher = searcher.postings(term.fieldname, text, weighting=searcher.weighting)
        while matcher.is_active():
            docs.append(matcher.id())
            scores.append(matcher.score())
            matcher.next()
        known = self._postings[key] = (np.array(docs, dtype=np.intp), np.array(scores))
        return known


def _order(entry: tuple[int, int, _Postings]) -> tuple[int, int]:
    return entry[0], entry[1]


def _union(a: _Postings, b: _Postings) -> _Postings:
    """A document of both gets the two scores added; of one, its score plus 0.0 (the
    same float)."""
    docs = sorted_union((a[0], b[0]))
    scores = np.zeros(len(docs))
    scores[np.searchsorted(docs, a[0])] += a[1]
    scores[np.searchsorted(docs, b[0])] += b[1]
    return docs, scores


def _intersect(a: _Postings, b: _Postings) -> _Postings:
    docs, in_a, in_b = np.intersect1d(a[0], b[0], assume_unique=True, return_indices=True)
    return docs, a[1][in_a] + b[1][in_b]
