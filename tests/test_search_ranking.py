"""Search results merged and ordered without sorting what is in order already, and each
word of a request looked up in the text index once.

`_best_of` (the union of a term's parts, each id at its best score) and `_matching` (a
search's rows in relevance order) are checked against the plain sorts they replace, on
random parts of every shape: one part in order, one out of order, several overlapping,
ties, empty ones.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from cachegql.demo import DemoConfig, write_pages
from cachegql.index import IndexStore, Snapshot, WordsMatched, build_index
from cachegql.index.disk.text import TextIndex, WordMatches
from cachegql.index.query.answers import _matching, find_packages, find_specs
from cachegql.index.query.leaves import Everything, RowsLeaf
from cachegql.index.query.search import Ranked, _best_of, _scored, search_packages, search_specs
from cachegql.schema import Context, build_schema


def _best_of_by_sorting(parts: list[Ranked]) -> Ranked:
    """The union as it was computed: one sort by id, then by best score first."""
    parts = [p for p in parts if len(p.ids)]
    if not parts:
        return Ranked(np.zeros(0, dtype=np.int32), np.zeros(0))
    ids = np.concatenate([p.ids for p in parts])
    scores = np.concatenate([p.scores for p in parts])
    order = np.lexsort((-scores, ids))
    ids, scores = ids[order], scores[order]
    first = np.ones(len(ids), dtype=np.bool_)
    np.not_equal(ids[1:], ids[:-1], out=first[1:])
    return Ranked(ids[first].astype(np.int32), scores[first])


def _random_part(rng: np.random.Generator, ascending: bool) -> Ranked:
    size = int(rng.integers(0, 60))
    if ascending:
        ids = np.sort(rng.choice(200, size=min(size, 200), replace=False))
    else:
        ids = rng.integers(0, 200, size)  # out of order, repeats too
    scores = rng.choice([0.5, 1.0, 2.0, 2.5, 50.0], len(ids))  # few values: ties
    return Ranked(ids.astype(np.int32), scores)


@pytest.mark.parametrize("seed", range(40))
def test_best_of_is_the_union_at_each_ids_best_score(seed: int) -> None:
    rng = np.random.default_rng(seed)
    shapes = [
        [_random_part(rng, ascending=True)],
        [_random_part(rng, ascending=False)],
        [_random_part(rng, ascending=bool(rng.integers(2))) for _ in range(rng.integers(2, 6))],
        [Ranked(np.zeros(0, dtype=np.int32), np.zeros(0)), _random_part(rng, ascending=True)],
    ]
    for parts in shapes:
        got, want = _best_of(parts), _best_of_by_sorting(parts)
        assert got.ids.dtype == np.int32
        assert got.ids.tolist() == want.ids.tolist()
        assert got.scores.tolist() == want.scores.tolist()


def test_one_part_in_order_is_kept_as_it_is() -> None:
    part = Ranked(np.array([3, 5, 9], dtype=np.int32), np.array([1.0, 2.0, 1.0]))
    assert _best_of([part]).ids is part.ids  # no copy, no sort
    wide = Ranked(np.array([3, 5, 9], dtype=np.int64), np.array([1.0, 2.0, 1.0]))
    assert _best_of([wide]).ids.dtype == np.int32  # as every search's ids are
    # Repeated ids are not "in order": they are merged.
    repeated = Ranked(np.array([3, 3, 9], dtype=np.int32), np.array([1.0, 2.0, 1.0]))
    merged = _best_of([repeated])
    assert merged.ids.tolist() == [3, 9] and merged.scores.tolist() == [2.0, 1.0]


def _matching_by_sorting(ids: npt.NDArray[np.int32], ranked: Ranked) -> list[int]:
    own = ranked.scores[np.searchsorted(ranked.ids, ids)]
    ordered: list[int] = ids[np.lexsort((ids, -own))].tolist()
    return ordered


@pytest.mark.parametrize("seed", range(40))
def test_search_results_come_best_first_then_by_id(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ranked = _best_of([_random_part(rng, ascending=False) for _ in range(3)])
    if rng.integers(2):  # one score for all: by id
        ranked = Ranked(ranked.ids, np.full(len(ranked.ids), 2.0))
    every = Everything()
    # With no other condition every ranked id matches; with one, a subset does.
    assert _matching([every], ranked, 200).tolist() == _matching_by_sorting(ranked.ids, ranked)
    wanted = np.sort(rng.choice(200, size=int(rng.integers(0, 200)), replace=False))
    subset = np.intersect1d(ranked.ids, wanted).astype(np.int32)
    got = _matching([RowsLeaf(wanted.astype(np.int32))], ranked, 200)
    assert got.tolist() == _matching_by_sorting(subset, ranked)


def test_a_requests_words_are_looked_up_once(demo_snapshot: Snapshot) -> None:
    words: WordsMatched = {}
    specs = search_specs(demo_snapshot, "ZLIB", words)
    assert list(words) == ["zlib"]  # kept as the text index reads it
    looked_up = words["zlib"]
    packages = search_packages(demo_snapshot, "zlib", words)
    assert words["zlib"] is looked_up and len(words) == 1
    # The same answers as searches that keep nothing.
    assert specs.ids.tolist() == search_specs(demo_snapshot, "zlib").ids.tolist()
    assert packages.ids.tolist() == search_packages(demo_snapshot, "zlib").ids.tolist()
    assert len(specs.ids) and len(packages.ids)


def test_what_a_request_matched_already_is_what_its_searches_use(
    demo_snapshot: Snapshot,
) -> None:
    # A word kept as matching nothing matches nothing in this request, though the text
    # index has it: the kept answer is the one read.
    words: WordsMatched = {"zlib": WordMatches()}
    assert not len(find_specs(demo_snapshot, search="zlib", words=words))
    assert not len(find_packages(demo_snapshot, search="zlib", words=words))
    assert len(find_specs(demo_snapshot, search="zlib", words={}))
    assert len(find_specs(demo_snapshot, search="zlib"))


@pytest.mark.parametrize("text", ["zlib", "py", "mpi", "+shared", "lib cuda"])
def test_unordered_results_are_the_same_rows_ascending(demo_snapshot: Snapshot, text: str) -> None:
    for find in (find_specs, find_packages):
        ordered = find(demo_snapshot, search=text)
        unordered = find(demo_snapshot, search=text, ordered=False)
        assert unordered.tolist() == sorted(ordered.tolist())
        assert len(set(ordered.tolist())) == len(ordered)


def test_a_count_and_facets_of_a_search_are_those_of_its_pages(pages_index: Path) -> None:
    """A page of none is answered from rows in no order: the same count and facets."""
    facets = "facets { compilers { value count } targets { value count } stacks { value count } }"
    answers = []
    with _opened(pages_index) as store:
        for first in (0, 3, None):
            page = "" if first is None else f", first: {first}"
            for root in (f'specs(search: "py"{page})', f'packages(search: "py"{page})'):
                query = f"{{ {root} {{ totalCount {facets if root[0] == 's' else ''} }} }}"
                answers.append(_data(store, query))
    assert answers[0:2] == answers[2:4] == answers[4:6]
    assert answers[0] is not None and answers[0]["specs"]["totalCount"] > 0


@pytest.mark.parametrize("seed", range(20))
def test_scores_by_id_are_read_ascending_with_their_weight(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.choice(10_000, size=int(rng.integers(1, 300)), replace=False)
    scores = {int(i): float(rng.random() * rng.choice([1.0, 3.7, 1e-3])) for i in ids}
    for weight in (2.0, 1.0, 0.7):
        got = _scored(scores, weight)
        assert got.ids.dtype == np.int32
        assert got.ids.tolist() == sorted(scores)
        assert got.scores.tolist() == [scores[i] * weight for i in sorted(scores)]


# A demo index of two tags whose searches rank their results otherwise than by row.
TAGS = ("develop", "v0.23.0")
RANKED_WORDS = ("py lib", "lib", "cuda", "zlib")


@pytest.fixture(scope="module")
def ranked_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ranked")
    write_pages(DemoConfig(specs=4000), folder / "pages")
    build_index([folder / "pages"], folder / "ix")
    return folder / "ix"


@contextlib.contextmanager
def _opened(index: Path) -> Iterator[IndexStore]:
    """An index store, closed whatever happens."""
    store = IndexStore(index)
    try:
        yield store
    finally:
        store.close()


def _data(store: IndexStore, query: str, variables: dict[str, Any] | None = None) -> Any:
    result = build_schema().execute_sync(
        query, variable_values=variables, context_value=Context(store=store)
    )
    assert result.errors is None, result.errors
    return result.data


def test_pages_of_a_search_come_in_relevance_order(ranked_index: Path) -> None:
    query = (
        "query($t: String, $s: String) { specs(tag: $t, search: $s, first: 8) "
        "{ nodes { hash } } packages(tag: $t, search: $s, first: 8) { nodes { name } } }"
    )
    not_by_row = 0
    with _opened(ranked_index) as store:
        for tag in TAGS:
            snapshot = store.snapshot(tag)
            for word in RANKED_WORDS:
                all_rows = find_specs(snapshot, search=word).tolist()
                all_ids = find_packages(snapshot, search=word).tolist()
                rows, ids = all_rows[:8], all_ids[:8]
                data = _data(store, query, {"t": tag, "s": word})
                assert [n["hash"] for n in data["specs"]["nodes"]] == [
                    snapshot.hash_of(r) for r in rows
                ]
                assert [n["name"] for n in data["packages"]["nodes"]] == [
                    snapshot.package(i).name for i in ids
                ]
                # Not the first 8 by row: an answer by row would fail here.
                not_by_row += (rows != sorted(all_rows)[:8]) + (ids != sorted(all_ids)[:8])
    assert not_by_row >= 10


def test_a_request_searching_two_tags_answers_as_two_requests(ranked_index: Path) -> None:
    fields = "{ totalCount nodes { hash } facets { versions { value count } } }"
    word = "py lib"
    with _opened(ranked_index) as store:
        both = _data(
            store,
            f'{{ a: specs(tag: "{TAGS[0]}", search: "{word}", first: 5) {fields} '
            f'b: specs(tag: "{TAGS[1]}", search: "{word}", first: 5) {fields} }}',
        )
        alone = [
            _data(store, f'{{ specs(tag: "{tag}", search: "{word}", first: 5) {fields} }}')
            for tag in TAGS
        ]
    assert both["a"] == alone[0]["specs"] and both["b"] == alone[1]["specs"]
    assert both["a"] != both["b"]


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The words the text index is asked for, as it is asked (the real lookup runs)."""
    asked: list[str] = []
    look_up = TextIndex.match_word

    def counted(self: TextIndex, token: str) -> WordMatches:
        asked.append(token)
        return look_up(self, token)

    monkeypatch.setattr(TextIndex, "match_word", counted)
    yield asked


def test_each_word_is_looked_up_once_a_request(ranked_index: Path, lookups: list[str]) -> None:
    # The web app's search: ranked packages with their counts, and facets of every spec.
    query = (
        "query($s: String) { packages(search: $s, first: 25) { totalCount nodes { name "
        "specs(first: 0) { totalCount } } } specs(search: $s, first: 0) { totalCount "
        "facets { compilers(first: 8) { value count } } } }"
    )
    with _opened(ranked_index) as store:
        first = _data(store, query, {"s": "Py lib"})
        assert sorted(lookups) == ["Py", "lib"]  # each word once, for both fields
        assert _data(store, query, {"s": "py lib"}) == first
        # Another request looks its words up again: nothing is kept between requests.
        assert sorted(lookups) == ["Py", "lib", "lib", "py"]
