"""Search words scored from postings read once (`TermScores`) give whoosh's own hits.

Every hit, its score (to the bit) and its place are compared with whoosh's search of the
same query, for every kind of search word `TextIndex` builds a query for: whole names,
single words, prefixes, words with a typo, words that expand to many, several words.
Both of whoosh's ways of adding an `Or` are met: in a tree by estimated size (an index of
more than 5,000 documents) and one after another into an array (a smaller one).
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest
from whoosh import index as whoosh_index

from cachegql.index import IndexStore
from cachegql.index.disk.layout import ATOM, PACKAGE, text_schema
from cachegql.index.disk.term_scores import ARRAY_UNION_MAX_DOCS
from cachegql.index.disk.text import FEW_HITS, TextIndex, _count_terms
from cachegql.index.disk.text_write import write_text_index

STEMS = ["py", "torch", "torch4", "torch5", "scatter", "scater", "zlib", "zlib-ng", "hdf5"]
STEMS += ["openmpi", "openblas", "open", "cuda", "rocm", "mpi", "mpich", "netcdf", "netcdf-c"]
STEMS += ["boost", "boosted", "kokkos", "kokkos-kernels", "r", "perl", "perl-json", "lib"]


def _documents(count: int, seed: int) -> list[tuple[str, int, str]]:
    """Package names and variant words built from shared stems, so that prefixes, typos
    and repeated words all match several documents with different lengths."""
    rng = random.Random(seed)
    documents = []
    for ref in range(count):
        words = rng.sample(STEMS, rng.choice((1, 1, 2, 2, 3, 4)))
        if rng.random() < 0.3:
            words.append(f"{rng.choice(STEMS)}{rng.randrange(40)}")
        kind = PACKAGE if rng.random() < 0.7 else ATOM
        documents.append((kind, ref, ("-" if kind == PACKAGE else " ").join(words)))
    return documents


def _tokens(text: TextIndex, seed: int, most: int = 1_500) -> list[str]:
    """Up to `most` search words: whole words and names, every prefix, a typo of each
    word, several words together."""
    rng = random.Random(seed)
    vocabulary = text._vocabulary
    tokens = set(vocabulary) | set(STEMS) | {"", "-", "nothing-here", "x", "\ud800zlib"}
    for word in vocabulary:
        tokens.update(word[:i] for i in range(1, len(word)))
        at = rng.randrange(len(word))
        tokens.add(word[:at] + rng.choice("aeiouxyz") + word[at + 1 :])
        tokens.add(word[:at] + word[at + 1 :])
    tokens.update("-".join(rng.sample(STEMS, rng.randint(2, 4))) for _ in range(300))
    return rng.sample(sorted(tokens), min(most, len(tokens)))


def _assert_same_hits(text: TextIndex, tokens: list[str]) -> tuple[int, int]:
    """How many tokens hit something, and how many hit more than `FEW_HITS` (read as
    arrays by `match_word`), each compared with whoosh's own search."""
    scores = text._term_scores
    assert scores is not None
    compared = many = 0
    for token in tokens:
        query = text._query(token)
        hits = text.whoosh_hits(query)
        assert scores.hits(query) == hits, token
        # What the estimate finds without scoring: the documents hit (BM25F scores are
        # positive, so an array union drops none).
        candidates = scores.candidates(query)
        assert candidates is not None and candidates.tolist() == sorted(n for _, n in hits)
        # The packages and atoms matched, in the hits' order, few hits or many.
        matched, expected = text.match_word(token), text._matches(hits)
        assert list(matched.packages.items()) == list(expected.packages.items()), token
        assert list(matched.atoms.items()) == list(expected.atoms.items()), token
        compared += bool(hits)
        many += len(hits) > FEW_HITS
    return compared, many


@pytest.mark.parametrize("count", [400, ARRAY_UNION_MAX_DOCS + 1_000])
def test_every_hit_and_score_is_whooshs(tmp_path: Path, count: int) -> None:
    write_text_index(tmp_path / "text", _documents(count, seed=count))
    text = TextIndex(tmp_path / "text")
    try:
        tokens = _tokens(text, seed=count, most=1_500 if count < 1_000 else 300)
        compared, many = _assert_same_hits(text, tokens)
        assert compared > len(tokens) // 2 and many > 10  # most tokens match, some many
    finally:
        text.close()


def test_a_ref_of_several_documents_keeps_the_last_hits_score(tmp_path: Path) -> None:
    """Two documents of one package (or atom): its entry keeps the place of its best hit
    and the score of its last, as whoosh's hits are read, few hits or many."""
    # A ref's documents are of different lengths, so of different scores.
    documents = [(PACKAGE, n % 40, "py" + f"-part{n}" * (1 + n // 40)) for n in range(120)]
    documents += [(ATOM, n % 5, "py" + f" v{n}" * (1 + n // 5)) for n in range(10)]
    write_text_index(tmp_path / "text", documents)
    text = TextIndex(tmp_path / "text")
    try:
        for token in ("py", "py-part7", "py-part1"):
            hits = text.whoosh_hits(text._query(token))
            matched, expected = text.match_word(token), text._matches(hits)
            assert list(matched.packages.items()) == list(expected.packages.items()), token
            assert list(matched.atoms.items()) == list(expected.atoms.items()), token
        assert len(text.whoosh_hits(text._query("py"))) > FEW_HITS  # read as arrays
        assert len(text.match_word("py").packages) == 40
        scores = {score for score, _ in text.whoosh_hits(text._query("py"))}
        assert len(scores) > 2  # which hit of a ref is kept shows in its score
    finally:
        text.close()


def test_the_demo_indexs_searches_are_whooshs(pages_index: Path) -> None:
    store = IndexStore(pages_index)
    try:
        for snapshot in store.snapshots.values():
            text = snapshot.text
            assert _assert_same_hits(text, _tokens(text, seed=1))[0] > 0
    finally:
        store.close()


def test_candidates_are_unknown_until_the_postings_were_read(tmp_path: Path) -> None:
    """The estimate runs on the event loop: it never reads postings, and says so."""
    write_text_index(tmp_path / "text", _documents(400, seed=6))
    text = TextIndex(tmp_path / "text")
    try:
        assert text.candidates("zlib") is None  # nothing searched yet
        text.match_word("zlib")
        assert text.candidates("zlib") is not None
        assert text.candidates("netcdf") is None  # a long word: typos not ready
        text.match_word("netcdf")
        found = text.candidates("netcdf")
        assert found is not None and len(found) > 0
        assert text.candidates("openmpi") is None  # its terms' postings not read yet
    finally:
        text.close()


def test_a_term_scored_once_is_read_once(tmp_path: Path) -> None:
    """Postings are kept for the index's own terms only: words it does not hold (any
    text a client sends) add nothing, so the memory stays bounded by the vocabulary."""
    write_text_index(tmp_path / "text", _documents(400, seed=3))
    text = TextIndex(tmp_path / "text")
    try:
        scores = text._term_scores
        assert scores is not None
        text.match_word("zlib")
        kept = len(scores._postings)
        assert kept > 0
        text.match_word("zlib")
        for n in range(200):
            text.match_word(f"qq{n}word")
        assert len(scores._postings) == kept
    finally:
        text.close()


def test_an_index_of_several_segments_is_searched_by_whoosh(tmp_path: Path) -> None:
    folder = tmp_path / "text"
    folder.mkdir()
    ix = whoosh_index.create_in(str(folder), text_schema())
    for part in (_documents(50, seed=4), _documents(50, seed=5)):
        writer = ix.writer()
        for kind, ref, words in part:
            writer.add_document(kind=kind, ref=ref, words=words, exact=words.lower())
        writer.commit(merge=False)
    ix.close()
    text = TextIndex(folder)
    try:
        assert text._term_scores is None
        matches = text.match_word("zlib")
        assert matches.packages or matches.atoms
    finally:
        text.close()


def test_pricing_a_word_builds_nothing_and_reads_nothing(tmp_path: Path) -> None:
    """What the estimate asks on the event loop (`query_terms`, `candidates`) counts the
    terms from tables in memory, as many as the query would look up, and opens no
    searcher for its thread; queries of many terms are not kept."""
    write_text_index(tmp_path / "text", _documents(400, seed=7))
    text = TextIndex(tmp_path / "text")
    try:
        text.match_word("netcdf")  # a search: the tables made, in this thread
        tokens = [*_tokens(text, seed=7, most=400), "LIB-lib-Lib", "-".join(["lib"] * 30)]
        for token in tokens:
            counted = text.query_terms(token)
            assert counted == _count_terms(text._new_query(token.lower())), token
        kept = dict(text._queries)
        big = "-".join(["lib"] * 30)
        assert text.query_terms(big) is not None and text._queries == kept  # nothing built
        text.match_word(big)
        assert big not in text._queries  # more than QUERY_TERMS_KEPT terms
        opened = len(text._searcher._searchers)
        found: list[object] = []
        worker = threading.Thread(target=lambda: found.append(text.candidates("netcdf")))
        worker.start()
        worker.join()
        assert found[0] is not None and len(text._searcher._searchers) == opened
    finally:
        text.close()
