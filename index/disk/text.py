"""Reading the full-text half of the index (whoosh): words of package names and variants.

Each tag has its own whoosh index (written by `index.disk.write`) with one document
per package and one per variant atom. A search word is looked up there, with prefixes
and one typo allowed (in words of five letters or more), and the matching packages and
atoms come back with whoosh's BM25F scores; turning those into specs is the job of
`index.query.search`.

The whoosh files are copied into memory when the index is opened (a few MB at 1M specs):
whoosh memory-maps its segments, and a mapped file truncated while served kills the
process (SIGBUS). The vocabulary is read then too, so that a damaged segment is refused
before the build is served rather than failing its first search.

Prefixes and typos are expanded against the tag's vocabulary here, in memory (a
sorted word list, and a map from each word with one letter deleted to the words it
came from), and whoosh then scores plain terms: that is much cheaper than whoosh's
own fuzzy and prefix queries, which walk the whole term list on every search.
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from whoosh.filedb.filestore import RamStorage
from whoosh.query import And, Or, Query, Term

from cachegql.index.disk.layout import PACKAGE, WORD
from cachegql.index.disk.term_scores import Hits, TermScores
from cachegql.index.disk.verify import IndexLoadError

__all__ = [
    "KIND_ATOM",
    "KIND_PACKAGE",
    "MIN_FUZZY_LENGTH",
    "TextIndex",
    "WordMatches",
    "within_one_edit",
]

KIND_PACKAGE, KIND_ATOM = 1, 2
_Refs = npt.NDArray[np.int64]
MIN_FUZZY_LENGTH = 5
MIN_PREFIX_LENGTH = 3
MAX_PREFIX_WORDS = 64
QUERIES_KEPT = 256
QUERY_TERMS_KEPT = 128
FEW_HITS = 64
"""A word's hits are read into its packages and atoms one by one up to this many, as arrays
past it: the arrays' numpy calls add about 4 µs to a word of 3 hits, and save 186 µs of
`py`'s 2,661 (445 against 259 µs for its whole `match_word`)."""
EXACT_BOOST, WORD_BOOST, PREFIX_BOOST, TYPO_BOOST = 8.0, 2.0, 0.5, 0.7


@dataclass
class WordMatches:
    """What one search word matched in a tag: package ids and atom ids, with scores."""

    packages: dict[int, float] = field(default_factory=dict)
    atoms: dict[int, float] = field(default_factory=dict)


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def within_one_edit(a: str, b: str) -> bool:
    """One typo at most: an insertion, a deletion, a substitution or two letters swapped."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            if len(a) < len(b):
                return a[i:] == b[i + 1 :]
            swapped = a[i + 1 : i + 2] == y and b[i + 1 : i + 2] == x
            return a[i + 1 :] == b[i + 1 :] or (swapped and a[i + 2 :] == b[i + 2 :])
    return True


class TextIndex:
    """Read side of one tag's whoosh index; safe to share between threads."""

    def __init__(self, folder: Path) -> None:
        storage = RamStorage()
        try:
            for path in folder.iterdir():
                storage.files[path.name] = path.read_bytes()
            self._index = storage.open_index()
            self._searcher = _Searchers(self._index)
            self._queries: dict[str, Query] = {}
            self._vocabulary  # noqa: B018 (read now: a damaged segment fails here)
        except Exception as exc:  # whoosh fails in many ways on damaged files
            raise IndexLoadError(
                f"{folder} is not a readable text index: {type(exc).__name__}: {exc}"
            ) from exc

    @cached_property
    def _catalog(self) -> tuple[list[tuple[Any, Any] | None], npt.NDArray[np.int8], _Refs]:
        """The kind and ref of each document, by number, as read and as arrays: read
        once, where reading a hit's stored fields (unpickled, decompressed) was an eighth
        of a search's time. The index is never written after its build, so the numbers
        do not change."""
        reader = self._searcher().reader()
        documents = [
            None if reader.is_deleted(n) else _kind_and_ref(reader.stored_fields(n))
            for n in range(reader.doc_count_all())
        ]
        kinds = np.zeros(len(documents), dtype=np.int8)
        refs = np.zeros(len(documents), dtype=np.int64)
        for number, document in enumerate(documents):
            if document is not None:
                kinds[number] = KIND_PACKAGE if document[0] == PACKAGE else KIND_ATOM
                refs[number] = document[1]
        return documents, kinds, refs

    @cached_property
    def _vocabulary(self) -> list[str]:
        return sorted(w.decode() for w in self._searcher().lexicon("words"))

    @cached_property
    def _by_deletion(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for word in self._vocabulary:
            for key in _deletions(word) | {word}:
                index.setdefault(key, []).append(word)
        return index

    def prefixed(self, word: str) -> list[str]:
        """Vocabulary words that start with `word` (and are longer), shortest first."""
        start, stop = self._prefix_range(word)
        return sorted(self._vocabulary[start:stop], key=len)[:MAX_PREFIX_WORDS]

    def _prefix_range(self, word: str) -> tuple[int, int]:
        """Where the words that start with `word` (and are longer) are in the vocabulary."""
        words = self._vocabulary
        return bisect.bisect_right(words, word), bisect.bisect_left(words, word + "\U0010ffff")

    def typos(self, word: str) -> list[str]:
        """Vocabulary words one edit away from `word` (not `word` itself)."""
        candidates: set[str] = set()
        for key in _deletions(word) | {word}:
            candidates.update(self._by_deletion.get(key, ()))
        return sorted(c for c in candidates if c != word and within_one_edit(c, word))

    def _query(self, token: str) -> Query:
        """The query of a search word. The last `QUERIES_KEPT` of at most
        `QUERY_TERMS_KEPT` terms are kept: a search asks for its words twice (its
        estimate, then its hits), and larger ones are never estimated small enough to run
        on the event loop."""
        token = token.lower()
        query = self._queries.get(token)
        if query is None:
            query = self._new_query(token)
            if _count_terms(query) <= QUERY_TERMS_KEPT:
                if len(self._queries) >= QUERIES_KEPT:
                    self._queries.clear()
                self._queries[token] = query
        return query

    def _new_query(self, token: str) -> Query:
        """The query of a lowercase search word."""
        words = WORD.findall(token)
        clauses: list[Query] = [Term("exact", token, boost=EXACT_BOOST)]
        per_word = []
        for word in words:
            alternatives: list[Query] = [Term("words", word, boost=WORD_BOOST)]
            if len(word) >= MIN_PREFIX_LENGTH:
                alternatives += [Term("words", w, boost=PREFIX_BOOST) for w in self.prefixed(word)]
            if len(word) >= MIN_FUZZY_LENGTH:
                alternatives += [Term("words", w, boost=TYPO_BOOST) for w in self.typos(word)]
            per_word.append(Or(alternatives))
        if len(per_word) == 1:
            clauses.append(per_word[0])
        elif per_word:
            clauses.append(And(per_word))
        return Or(clauses)

    @cached_property
    def _term_scores(self) -> TermScores | None:
        """whoosh's scores from postings read once; None for an index of several
        segments (the build writes one), which whoosh searches itself."""
        return TermScores(self._searcher) if self._searcher().is_atomic() else None

    def match_word(self, token: str) -> WordMatches:
        """Packages and atoms whose words match `token`: exactly, by prefix or with one typo.

        A token of several words (`py-torch`) needs all of them, or the exact whole name.
        """
        query = self._query(token)
        scores = self._term_scores
        if scores is None:
            return self._matches(self.whoosh_hits(query))
        docs, values = scores.ranked(query)
        if len(docs) <= FEW_HITS:
            return self._matches(list(zip(values.tolist(), docs.tolist(), strict=True)))
        kinds, refs = self.document_refs
        found = kinds[docs]
        matches = WordMatches()
        # Best first, as `_matches` fills them from the hits.
        for kind, target in ((KIND_PACKAGE, matches.packages), (KIND_ATOM, matches.atoms)):
            chosen = found == kind
            target.update(zip(refs[docs[chosen]].tolist(), values[chosen].tolist(), strict=True))
        return matches

    def query_terms(self, token: str) -> int | None:
        """How many terms searching `token` looks up (the whole name, each word, its
        prefixes and typos), counted from tables in memory without building its query or
        reading the index: None until a search has made those tables (the documents', and
        the typos' for a word of 5 letters or more), and where whoosh searches itself."""
        if self.__dict__.get("_term_scores") is None or "_catalog" not in self.__dict__:
            return None
        token = token.lower()
        kept = self._queries.get(token)
        if kept is not None:
            return _count_terms(kept)
        if not self._typos_ready(token):
            return None
        return 1 + sum(self._word_terms(word) for word in WORD.findall(token))

    def _word_terms(self, word: str) -> int:
        """The terms `_new_query` looks up for one word."""
        terms = 1
        if len(word) >= MIN_PREFIX_LENGTH:
            start, stop = self._prefix_range(word)
            terms += min(stop - start, MAX_PREFIX_WORDS)
        if len(word) >= MIN_FUZZY_LENGTH:
            terms += len(self.typos(word))
        return terms

    def candidates(self, token: str) -> npt.NDArray[np.intp] | None:
        """The documents `token` may match, found without scoring and without reading the
        index: None until a search has made what this needs (`query_terms`) and read the
        postings of each term the index holds, and where whoosh searches itself. Its cost
        follows `query_terms` (its query is built), so ask that first."""
        scores = self.__dict__.get("_term_scores")
        if scores is None or self.query_terms(token) is None:
            return None
        found: npt.NDArray[np.intp] | None = scores.candidates(self._query(token))
        return found

    def _typos_ready(self, token: str) -> bool:
        """Whether `token`'s query can be made without reading the vocabulary at length:
        its typos need the table of deletions, which a search of a long word makes."""
        if "_by_deletion" in self.__dict__:
            return True
        return all(len(word) < MIN_FUZZY_LENGTH for word in WORD.findall(token.lower()))

    @property
    def document_refs(self) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int64]]:
        """By document number: its kind (`KIND_PACKAGE`, `KIND_ATOM`, 0 for a deleted
        one) and its package or atom id."""
        return self._catalog[1], self._catalog[2]

    def whoosh_hits(self, query: Query) -> Hits:
        """The hits of whoosh's own search, best first (what `TermScores` gives faster)."""
        hits: Hits = self._searcher().search(query, limit=None).top_n
        return hits

    def _matches(self, hits: Hits) -> WordMatches:
        documents = self._catalog[0]
        matches = WordMatches()
        for score, number in hits:  # best first, as iterating the hits would
            document = documents[number]
            if document is None:
                continue
            kind, ref = document
            target = matches.packages if kind == PACKAGE else matches.atoms
            target[ref] = float(score)
        return matches

    def close(self) -> None:
        self._searcher.close()
        self._index.close()


class _Searchers:
    """A whoosh searcher for each thread (searchers hold file positions), all closed
    together. Apart from `TextIndex`, so that what reads through it (`TermScores`) holds
    no reference back to the index: a replaced index is freed by its last reference going,
    not by a collection (it is frozen: `gc.freeze`)."""

    def __init__(self, index: Any) -> None:
        self._index = index
        self._local = threading.local()
        self._searchers: list[Any] = []
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        searcher = getattr(self._local, "searcher", None)
        if searcher is None:
            searcher = self._local.searcher = self._index.searcher()
            with self._lock:
                self._searchers.append(searcher)
        return searcher

    def close(self) -> None:
        with self._lock:
            for searcher in self._searchers:
                searcher.close()
            self._searchers.clear()


def _count_terms(query: Query) -> int:
    if isinstance(query, Term):
        return 1
    return sum(_count_terms(sub) for sub in getattr(query, "subqueries", ()))


def _kind_and_ref(fields: dict[str, Any]) -> tuple[Any, Any]:
    return fields["kind"], fields["ref"]
