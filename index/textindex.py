"""The full-text half of the index (whoosh): words of package names and of variants.

One whoosh document per package and per variant atom of each tag. A search word is
looked up here, with one typo allowed in words of five letters or more, and the
matching packages and atoms come back with whoosh's BM25F scores; turning those
into specs is the in-memory index's job (see `index.search`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh.analysis import LowercaseFilter, RegexTokenizer
from whoosh.fields import ID, NUMERIC, TEXT, Schema
from whoosh.query import FuzzyTerm, Or, Prefix, Query, Term

PACKAGE = "package"
ATOM = "atom"
# Package names split on - _ . ; variants also on = : , and quotes.
_WORD_PATTERN = r"[^\s\-_.=:,+~'\"/@%^]+"
WORD = re.compile(_WORD_PATTERN)
MIN_FUZZY_LENGTH = 5
MIN_PREFIX_LENGTH = 3


def _schema() -> Schema:
    analyzer = RegexTokenizer(_WORD_PATTERN) | LowercaseFilter()
    return Schema(
        tag=ID(),
        kind=ID(stored=True),
        ref=NUMERIC(int, stored=True),
        words=TEXT(analyzer=analyzer, phrase=False),
        exact=ID(),
    )


@dataclass(frozen=True, slots=True)
class TextDocument:
    """One searchable thing: a package or a variant atom, by its id within the tag."""

    tag: str
    kind: str
    ref: int
    text: str


def write_text_index(folder: Path, documents: Iterable[TextDocument]) -> int:
    """Build a whoosh index of `documents` in the empty `folder`; return how many."""
    folder.mkdir(parents=True, exist_ok=True)
    ix = whoosh_index.create_in(str(folder), _schema())
    writer = ix.writer(limitmb=256)
    count = 0
    for doc in documents:
        writer.add_document(
            tag=doc.tag, kind=doc.kind, ref=doc.ref, words=doc.text, exact=doc.text.lower()
        )
        count += 1
    writer.commit(optimize=True)
    ix.close()
    return count


@dataclass
class WordMatches:
    """What one search word matched in a tag: package ids and atom ids, with scores."""

    packages: dict[int, float] = field(default_factory=dict)
    atoms: dict[int, float] = field(default_factory=dict)


class TextIndex:
    """Read side of the whoosh index; safe to share between threads."""

    def __init__(self, folder: Path) -> None:
        self._index = whoosh_index.open_dir(str(folder))
        self._local = threading.local()
        self._searchers: list[Any] = []
        self._lock = threading.Lock()

    def _searcher(self) -> Any:
        # whoosh searchers hold file positions, so each thread gets its own.
        searcher = getattr(self._local, "searcher", None)
        if searcher is None:
            searcher = self._local.searcher = self._index.searcher()
            with self._lock:
                self._searchers.append(searcher)
        return searcher

    def match_word(self, tag: str, word: str) -> WordMatches:
        """Packages and atoms of `tag` whose words match `word` (exactly, by prefix or one typo)."""
        word = word.lower()
        clauses: list[Query] = [Term("exact", word, boost=8.0), Term("words", word, boost=2.0)]
        if len(word) >= MIN_PREFIX_LENGTH:
            clauses.append(Prefix("words", word, boost=0.5))
        if len(word) >= MIN_FUZZY_LENGTH:
            clauses.append(FuzzyTerm("words", word, maxdist=1, prefixlength=0, boost=0.7))
        results = self._searcher().search(Or(clauses), limit=None, filter=Term("tag", tag))
        matches = WordMatches()
        for hit in results:
            target = matches.packages if hit["kind"] == PACKAGE else matches.atoms
            target[hit["ref"]] = float(hit.score)
        return matches

    def close(self) -> None:
        with self._lock:
            for searcher in self._searchers:
                searcher.close()
            self._searchers.clear()
        self._index.close()
