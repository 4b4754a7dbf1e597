"""Full-text search: words against package names and variants, plus hash prefixes.

Each word of the search text must match (AND). A word matches a spec when it matches
the spec's package name (whoosh, one typo allowed in words of 5+ letters), one of its
variants, or the start of its hash. A spec's score is the sum over words of its best
way of matching; results come best first.

What a search may cost is bounded by its words, not by what a client sends: at most
`MAX_TERMS` words; a word longer than a hash is never a hash prefix; a word longer than
`MAX_WORD_LENGTH` is not looked up in the text index (no name or variant has such a
word, and its typo expansion would cost the square of its length).
"""

from __future__ import annotations

import re
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cachegql.index.budget import check
from cachegql.index.disk.columns import Rows
from cachegql.index.disk.layout import WORD
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.disk.sorted_ids import sorted_intersection
from cachegql.index.disk.text import KIND_ATOM, KIND_PACKAGE, WordMatches
from cachegql.index.errors import CriteriaError, shorten
from cachegql.index.query.criteria import parse_variant_constraint
from cachegql.index.query.filtering import ranges
from cachegql.index.spack.hashes import HASH_ALPHABET, HASH_LENGTH, normalize_prefix

__all__ = [
    "MAX_TERMS",
    "MAX_WORD_LENGTH",
    "Ranked",
    "WordsMatched",
    "parse_terms",
    "search_packages",
    "search_reads",
    "search_specs",
]

Scores = npt.NDArray[np.float64]
NAME_WEIGHT = 2.0
VARIANT_WEIGHT = 1.0
HASH_SCORE = 50.0
MIN_HASH_WORD = 5
# Words of one search: each costs a text-index query; people type a few.
MAX_TERMS = 32
# Spack's longest package names have about 50 characters (r-illuminahumanmethylation...,
# whose longest word has 36), so a longer search word matches no name or variant, exactly,
# by prefix or with one typo: it is not looked up. Up to this length, its typo expansion
# (quadratic in the length) costs ~128 lookups of short keys.
MAX_WORD_LENGTH = 128
TERM_READS = 100
"""What looking up one term of the text index costs, in rows read (`search_reads`): a
term's postings merged into a word's hits took ~15 µs at 1M specs, as long as testing
some 100 rows of a filter (`bench/inline_price.py`)."""
WordsMatched = MutableMapping[str, WordMatches]
"""What the words searched so far in one tag matched, by lowercase word: kept by one request
(the web app's search asks for its words twice, for its packages and for its specs' count
and facets, a few ms each for `py` at 1M specs). A request's own: no eviction, no lock, its
memory bounded by the request's words."""
_VARIANT_TERM = re.compile(r"^([+~\-][A-Za-z0-9_]|[A-Za-z0-9_][\w.\-]*(:=|==|=))")


@dataclass(frozen=True, slots=True)
class Term:
    """One word of a search: plain text, an explicit `/hash`, or a variant like `+mpi`."""

    text: str
    kind: str  # "word" | "hash" | "variant"


@dataclass(frozen=True, slots=True)
class Ranked:
    """Matching ids (spec rows or package ids) ascending, with their scores."""

    ids: Rows
    scores: Scores


def parse_terms(text: str) -> list[Term]:
    """Split search text into terms; raise CriteriaError for an unusable one, or for more
    than `MAX_TERMS` words."""
    if len(text.split(maxsplit=MAX_TERMS)) > MAX_TERMS:  # never splits more than that
        raise CriteriaError(f"a search has at most {MAX_TERMS} words; {shorten(text)} has more")
    terms = []
    for token in text.split():
        if token.startswith("/"):
            terms.append(Term(normalize_prefix(token), "hash"))
        elif _VARIANT_TERM.match(token):
            parse_variant_constraint(token, "search term")
            terms.append(Term(token, "variant"))
        elif WORD.search(token):
            terms.append(Term(token, "word"))
    if not terms:
        raise CriteriaError(f"search text {shorten(text)} has no words to search for")
    return terms


def search_specs(snapshot: Snapshot, text: str, words: WordsMatched | None = None) -> Ranked:
    """Spec rows matching every term of `text`, with relevance scores; `words`: what its
    words matched already (it gets those it looks up)."""
    return _every_term(snapshot, text, _term_specs, {} if words is None else words)


def search_packages(snapshot: Snapshot, text: str, words: WordsMatched | None = None) -> Ranked:
    """Package ids matching every term of `text`, with relevance scores; `words` as for
    `search_specs`."""
    return _every_term(snapshot, text, _term_packages, {} if words is None else words)


def _every_term(
    snapshot: Snapshot,
    text: str,
    match: Callable[[Snapshot, Term, WordsMatched], Ranked],
    words: WordsMatched,
) -> Ranked:
    """What matches all terms (AND), each term's score added."""
    terms = parse_terms(text)
    check()
    result = match(snapshot, terms[0], words)
    for term in terms[1:]:
        if not len(result.ids):
            break
        check()
        result = _both(result, match(snapshot, term, words))
    return result


def search_reads(
    snapshot: Snapshot, text: str, *, specs: bool, enough: int | None = None
) -> int | None:
    """At most how many ids searching `text` reads (`search_specs` if `specs`, else
    `search_packages`), known before anything is scored: for each word, `TERM_READS` for
    each term of the text index it looks up, then the documents it may match, each with
    the ids it brings (a package's spec rows or its id; a variant atom's spec rows or
    packages), and the rows of a hash it may start; for a variant, its atoms' rows. Every
    term counts, though a search stops at the first that matches nothing. None where the
    text index cannot tell yet (`TextIndex.query_terms`); 0 for text the search refuses
    before reading anything. Counting stops past `enough`, if given, the terms first and
    word by word: so its cost is bounded by `enough` too (a word's documents are only
    found once all words' terms are known to be within it)."""
    try:
        terms = parse_terms(text)
    except CriteriaError:
        return 0
    words = [t.text for t in terms if t.kind == "word" and len(t.text) <= MAX_WORD_LENGTH]
    reads = 0
    for word in words:
        looked_up = snapshot.text.query_terms(word)
        if looked_up is None:
            return None
        reads += looked_up * TERM_READS
        if enough is not None and reads > enough:
            return reads
    for term in terms:
        if enough is not None and reads > enough:
            return reads
        if term.kind == "variant":
            atom_ids = snapshot.dictionaries["atoms"].ids
            atoms = parse_variant_constraint(term.text).atoms
            found = np.array([atom_ids[a] for a in atoms if a in atom_ids], dtype=np.int64)
            reads += _items(snapshot.sets["atoms"].postings.offsets, found)
            continue
        if term.kind == "word" and len(term.text) <= MAX_WORD_LENGTH:
            documents = snapshot.text.candidates(term.text)
            if documents is None:
                return None
            reads += len(documents) + _brought(snapshot, documents, specs)
        reads += len(_hash_rows(snapshot, term))
    return reads


def _brought(snapshot: Snapshot, documents: npt.NDArray[np.intp], specs: bool) -> int:
    """The ids the text index's `documents` bring to a search of specs or of packages."""
    kinds, refs = snapshot.text.document_refs
    packages = refs[documents[kinds[documents] == KIND_PACKAGE]]
    atoms = refs[documents[kinds[documents] == KIND_ATOM]]
    if specs:
        brought = _items(snapshot.package_start, packages)
        return brought + _items(snapshot.sets["atoms"].postings.offsets, atoms)
    return len(packages) + _items(snapshot.package_atoms.postings.offsets, atoms)


def _items(offsets: npt.NDArray[np.int64], values: npt.NDArray[np.int64]) -> int:
    """How many items the groups of `values` hold together (the groups' offsets given)."""
    return int((offsets[values + 1] - offsets[values]).sum())


def _text_matches(snapshot: Snapshot, term: Term, words: WordsMatched) -> WordMatches:
    """What a word matches in the text index (as `words` has it, else looked up and kept
    there); nothing for a word longer than any there."""
    if len(term.text) > MAX_WORD_LENGTH:
        return WordMatches()
    key = term.text.lower()  # as the text index reads it
    found = words.get(key)
    if found is None:
        found = words[key] = snapshot.text.match_word(term.text)
    return found


def _term_specs(snapshot: Snapshot, term: Term, words: WordsMatched) -> Ranked:
    parts: list[Ranked] = []
    if term.kind == "variant":
        return _variant_specs(snapshot, term.text)
    if term.kind == "word":
        parts.extend(_word_specs(snapshot, _text_matches(snapshot, term, words)))
    hash_rows = _hash_rows(snapshot, term)
    if len(hash_rows):
        parts.append(Ranked(hash_rows, np.full(len(hash_rows), HASH_SCORE)))
    return _best_of(parts)


def _term_packages(snapshot: Snapshot, term: Term, words: WordsMatched) -> Ranked:
    if term.kind == "variant":
        return _to_packages(snapshot, _variant_specs(snapshot, term.text))
    parts: list[Ranked] = []
    if term.kind == "word":
        matches = _text_matches(snapshot, term, words)
        if matches.packages:
            parts.append(_scored(matches.packages, NAME_WEIGHT))
        if matches.atoms:
            column = snapshot.package_atoms
            for atom, score in matches.atoms.items():
                check()
                ids = column.postings(atom)
                parts.append(Ranked(ids, np.full(len(ids), score * VARIANT_WEIGHT)))
    hash_rows = _hash_rows(snapshot, term)
    if len(hash_rows):
        parts.append(_to_packages(snapshot, Ranked(hash_rows, np.full(len(hash_rows), HASH_SCORE))))
    return _best_of(parts)


def _word_specs(snapshot: Snapshot, words: WordMatches) -> list[Ranked]:
    parts = []
    if words.packages:
        named = _scored(words.packages, NAME_WEIGHT)
        ids = named.ids
        starts = snapshot.package_start[ids]
        ends = snapshot.package_start[ids + 1]
        parts.append(Ranked(ranges(starts, ends), np.repeat(named.scores, ends - starts)))
    atoms = snapshot.sets["atoms"]
    for atom, score in words.atoms.items():
        check()
        rows = atoms.postings(atom)
        parts.append(Ranked(rows, np.full(len(rows), score * VARIANT_WEIGHT)))
    return parts


def _variant_specs(snapshot: Snapshot, text: str) -> Ranked:
    atom_ids = snapshot.dictionaries["atoms"].ids
    rows: Rows | None = None
    for atom in parse_variant_constraint(text).atoms:
        atom_id = atom_ids.get(atom)
        found = snapshot.sets["atoms"].postings(atom_id) if atom_id is not None else _EMPTY
        rows = found if rows is None else sorted_intersection(rows, found)
    rows = _EMPTY if rows is None else rows
    return Ranked(rows, np.full(len(rows), VARIANT_WEIGHT * 2))


def _hash_rows(snapshot: Snapshot, term: Term) -> Rows:
    """The rows of an explicit `/hash` term, or of a word that could start a hash."""
    if term.kind == "word" and not MIN_HASH_WORD <= len(term.text) <= HASH_LENGTH:
        return _EMPTY  # too short to mean a hash, or longer than any
    word = term.text.lower()
    if term.kind == "word" and not HASH_ALPHABET.issuperset(word):
        return _EMPTY
    lo, hi = snapshot.hash_prefix_rows(word)
    return np.sort(snapshot.hash_rows[lo:hi])


def _to_packages(snapshot: Snapshot, specs: Ranked) -> Ranked:
    packages = snapshot.columns["package"].codes[specs.ids].astype(np.int32)
    return _best_of([Ranked(packages, specs.scores)])


def _scored(scores: dict[int, float], weight: float) -> Ranked:
    """The ids of `scores` ascending, each with its score times `weight` (read as arrays:
    `py` names 2,661 packages at 1M specs, and a loop over them took 0.3 ms)."""
    ids = np.fromiter(scores.keys(), dtype=np.int32, count=len(scores))
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    order = ids.argsort()  # the keys are distinct
    return Ranked(ids[order], values[order] * weight)


def _best_of(parts: list[Ranked]) -> Ranked:
    """Union of parts; an id in several keeps its best score."""
    parts = [p for p in parts if len(p.ids)]
    if not parts:
        return Ranked(_EMPTY, np.zeros(0))
    if len(parts) == 1 and _ascending(parts[0].ids):
        # A word that names packages only (`py`: 164k rows at 1M specs) is one part,
        # already in order: a check of 0.1 ms, where sorting it took 4.
        return Ranked(parts[0].ids.astype(np.int32, copy=False), parts[0].scores)
    ids = np.concatenate([p.ids for p in parts])
    scores = np.concatenate([p.scores for p in parts])
    # Grouped by id with one sort, each group's best taken by `reduceat`: a sort by both
    # keys took a quarter longer. Stable for its speed, not for the order: the parts are
    # ascending runs, which it merges (`r`'s 120k ids: 0.2 ms against 1.8 by default).
    order = np.argsort(ids, kind="stable")
    ids = ids[order]
    first = np.ones(len(ids), dtype=np.bool_)
    np.not_equal(ids[1:], ids[:-1], out=first[1:])
    starts = first.nonzero()[0]
    return Ranked(ids[starts].astype(np.int32), np.maximum.reduceat(scores[order], starts))


def _ascending(ids: Rows) -> bool:
    """Whether `ids` are strictly ascending (so distinct)."""
    return bool((ids[1:] > ids[:-1]).all())


def _both(left: Ranked, right: Ranked) -> Ranked:
    """Ids in both, scores added."""
    ids, at_left, at_right = np.intersect1d(
        left.ids, right.ids, assume_unique=True, return_indices=True
    )
    return Ranked(ids.astype(np.int32), left.scores[at_left] + right.scores[at_right])


_EMPTY: Rows = np.zeros(0, dtype=np.int32)
