"""Full-text search: words against package names and variants, plus hash prefixes.

Each word of the search text must match (AND). A word matches a spec when it matches
the spec's package name (whoosh, one typo allowed in words of 5+ letters), one of its
variants, or the start of its hash. A spec's score is the sum over words of its best
way of matching; results come best first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cachegql.index.disk.columns import Rows
from cachegql.index.disk.layout import WORD
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.disk.text import WordMatches
from cachegql.index.errors import CriteriaError
from cachegql.index.query.filtering import ranges
from cachegql.index.spack.hashes import HASH_ALPHABET, normalize_prefix
from cachegql.index.spack.variants import parse_variant

__all__ = ["Ranked", "parse_terms", "search_packages", "search_specs"]

Scores = npt.NDArray[np.float64]
NAME_WEIGHT = 2.0
VARIANT_WEIGHT = 1.0
HASH_SCORE = 50.0
MIN_HASH_WORD = 5
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
    """Split search text into terms; raise CriteriaError for an unusable one."""
    terms = []
    for token in text.split():
        if token.startswith("/"):
            terms.append(Term(normalize_prefix(token), "hash"))
        elif _VARIANT_TERM.match(token):
            try:
                parse_variant(token)
            except ValueError as exc:
                raise CriteriaError(f"search term {token!r}: {exc}") from None
            terms.append(Term(token, "variant"))
        elif WORD.search(token):
            terms.append(Term(token, "word"))
    if not terms:
        raise CriteriaError(f"search text {text!r} has no words to search for")
    return terms


def search_specs(snapshot: Snapshot, text: str) -> Ranked:
    """Spec rows matching every term of `text`, with relevance scores."""
    return _every_term(snapshot, text, _term_specs)


def search_packages(snapshot: Snapshot, text: str) -> Ranked:
    """Package ids matching every term of `text`, with relevance scores."""
    return _every_term(snapshot, text, _term_packages)


def _every_term(snapshot: Snapshot, text: str, match: Callable[[Snapshot, Term], Ranked]) -> Ranked:
    """What matches all terms (AND), each term's score added."""
    terms = parse_terms(text)
    result = match(snapshot, terms[0])
    for term in terms[1:]:
        if not len(result.ids):
            break
        result = _both(result, match(snapshot, term))
    return result


def _term_specs(snapshot: Snapshot, term: Term) -> Ranked:
    parts: list[Ranked] = []
    if term.kind == "variant":
        return _variant_specs(snapshot, term.text)
    if term.kind == "word":
        words = snapshot.text.match_word(term.text)
        parts.extend(_word_specs(snapshot, words))
    hash_rows = _hash_rows(snapshot, term)
    if len(hash_rows):
        parts.append(Ranked(hash_rows, np.full(len(hash_rows), HASH_SCORE)))
    return _best_of(parts)


def _term_packages(snapshot: Snapshot, term: Term) -> Ranked:
    if term.kind == "variant":
        return _to_packages(snapshot, _variant_specs(snapshot, term.text))
    parts: list[Ranked] = []
    if term.kind == "word":
        words = snapshot.text.match_word(term.text)
        if words.packages:
            parts.append(_scored(words.packages, NAME_WEIGHT))
        if words.atoms:
            column = snapshot.package_atoms
            for atom, score in words.atoms.items():
                ids = column.postings(atom)
                parts.append(Ranked(ids, np.full(len(ids), score * VARIANT_WEIGHT)))
    hash_rows = _hash_rows(snapshot, term)
    if len(hash_rows):
        parts.append(_to_packages(snapshot, Ranked(hash_rows, np.full(len(hash_rows), HASH_SCORE))))
    return _best_of(parts)


def _word_specs(snapshot: Snapshot, words: WordMatches) -> list[Ranked]:
    parts = []
    if words.packages:
        ids = np.array(sorted(words.packages), dtype=np.int32)
        starts = snapshot.package_start[ids]
        ends = snapshot.package_start[ids + 1]
        scores = np.array([words.packages[int(i)] for i in ids]) * NAME_WEIGHT
        parts.append(Ranked(ranges(starts, ends), np.repeat(scores, ends - starts)))
    atoms = snapshot.sets["atoms"]
    for atom, score in words.atoms.items():
        rows = atoms.postings(atom)
        parts.append(Ranked(rows, np.full(len(rows), score * VARIANT_WEIGHT)))
    return parts


def _variant_specs(snapshot: Snapshot, text: str) -> Ranked:
    atom_ids = snapshot.dictionaries["atoms"].ids
    rows: Rows | None = None
    for atom in parse_variant(text).atoms:
        atom_id = atom_ids.get(atom)
        found = snapshot.sets["atoms"].postings(atom_id) if atom_id is not None else _EMPTY
        rows = found if rows is None else np.intersect1d(rows, found, assume_unique=True)
    rows = _EMPTY if rows is None else rows
    return Ranked(rows, np.full(len(rows), VARIANT_WEIGHT * 2))


def _hash_rows(snapshot: Snapshot, term: Term) -> Rows:
    word = term.text.lower()
    if term.kind == "word" and not (len(word) >= MIN_HASH_WORD and HASH_ALPHABET.issuperset(word)):
        return _EMPTY
    lo, hi = snapshot.hash_prefix_rows(word)
    return np.sort(snapshot.hash_rows[lo:hi])


def _to_packages(snapshot: Snapshot, specs: Ranked) -> Ranked:
    packages = snapshot.columns["package"].codes[specs.ids]
    return _best_of([Ranked(packages, specs.scores)])


def _scored(scores: dict[int, float], weight: float) -> Ranked:
    ids = np.array(sorted(scores), dtype=np.int32)
    return Ranked(ids, np.array([scores[int(i)] * weight for i in ids]))


def _best_of(parts: list[Ranked]) -> Ranked:
    """Union of parts; an id in several keeps its best score."""
    parts = [p for p in parts if len(p.ids)]
    if not parts:
        return Ranked(_EMPTY, np.zeros(0))
    ids = np.concatenate([p.ids for p in parts])
    scores = np.concatenate([p.scores for p in parts])
    order = np.lexsort((-scores, ids))
    ids, scores = ids[order], scores[order]
    first = np.ones(len(ids), dtype=np.bool_)
    np.not_equal(ids[1:], ids[:-1], out=first[1:])
    return Ranked(ids[first].astype(np.int32), scores[first])


def _both(left: Ranked, right: Ranked) -> Ranked:
    """Ids in both, scores added."""
    ids, at_left, at_right = np.intersect1d(
        left.ids, right.ids, assume_unique=True, return_indices=True
    )
    return Ranked(ids.astype(np.int32), left.scores[at_left] + right.scores[at_right])


_EMPTY: Rows = np.zeros(0, dtype=np.int32)
