"""Hostile input costs what its answer costs: the index's work is bounded.

On a real index of ~20k specs (the demo generator's `develop` tag): boolean filters of
thousands of branches answer right (checked against a plain evaluation of the pages)
without holding every branch's rows; search words of 10 KB and 100 KB answer at once
without touching the hash array; error messages quote a megabyte of input shortened;
and a time budget stops a heavy query. The bounds asserted are generous: measured
numbers are an order of magnitude below them (see each test).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Iterator
from itertools import cycle, islice
from pathlib import Path
from typing import Any, TypeVar

import pytest

from cachegql.demo import DemoConfig, write_pages
from cachegql.index import (
    CriteriaError,
    Facets,
    IndexStore,
    OverBudgetError,
    Snapshot,
    SpecCriteria,
    StringMatch,
    build_index,
    deadline,
    find_packages,
    find_spec,
    find_specs,
    parse_variant_constraint,
)
from cachegql.index.errors import shorten
from cachegql.index.query.search import MAX_TERMS
from tests import oracle

Spec = dict[str, Any]
T = TypeVar("T")
MB = 2**20
TAG = "develop"
# Field values as the API means them, read from the pages (not from the index).
FIELDS: dict[str, Callable[[Spec], str]] = {
    "package": lambda spec: str(spec["name"]),
    "version": lambda spec: str(spec["versions"][0]),
    "os": lambda spec: str(spec["os"]),
    "target": lambda spec: str(spec["target"]),
    "compiler": lambda spec: oracle.compiler_normalized(spec["compiler"]),
}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bounded") / "pages"
    write_pages(DemoConfig(specs=30_000), folder)
    return folder


@pytest.fixture(scope="module")
def snapshot(pages: Path) -> Iterator[Snapshot]:
    out = pages.parent / "ix"
    build_index([pages], out)
    store = IndexStore(out)
    yield store.snapshot(TAG)
    store.close()


@pytest.fixture(scope="module")
def specs(pages: Path) -> list[Spec]:
    return list(oracle.read_specs([pages])[TAG].values())


def values(specs: list[Spec], field: str) -> list[str]:
    return sorted({FIELDS[field](spec) for spec in specs})


# --- a plain evaluation of the criteria these tests use ---------------------------------------


def string_holds(value: str, match: StringMatch) -> bool:
    """The API's meaning, written out: an empty value (the source does not say) matches
    no operator."""
    return bool(value) and (
        (match.eq is None or value == match.eq)
        and (match.ne is None or value != match.ne)
        and (match.in_ is None or value in match.in_)
        and (match.prefix is None or value.startswith(match.prefix))
        and (match.contains is None or match.contains in value)
    )


def holds(spec: Spec, criteria: SpecCriteria) -> bool:
    return (
        all(string_holds(FIELDS[field](spec), match) for field, match in criteria.fields)
        and all(holds(spec, sub) for sub in criteria.all_of)
        and (criteria.any_of is None or any(holds(spec, sub) for sub in criteria.any_of))
        and (criteria.not_ is None or not holds(spec, criteria.not_))
    )


def fields_of(criteria: SpecCriteria) -> set[str]:
    subs = [*criteria.all_of, *(criteria.any_of or ()), *filter(None, [criteria.not_])]
    return {f for f, _ in criteria.fields}.union(*(fields_of(s) for s in subs))


def expected(specs: list[Spec], criteria: SpecCriteria) -> set[str]:
    """Hashes of the specs matching `criteria`, evaluated once per distinct combination
    of the values it looks at (thousands of branches times every spec would be slow)."""
    used = sorted(fields_of(criteria))
    verdicts: dict[tuple[str, ...], bool] = {}
    found = set()
    for spec in specs:
        key = tuple(FIELDS[field](spec) for field in used)
        if key not in verdicts:
            verdicts[key] = holds(spec, criteria)
        if verdicts[key]:
            found.add(spec["hash"])
    return found


def ne(field: str, value: str) -> SpecCriteria:
    return SpecCriteria(fields=((field, StringMatch(ne=value)),))


def eq(field: str, value: str) -> SpecCriteria:
    return SpecCriteria(fields=((field, StringMatch(eq=value)),))


def spread(items: list[T], n: int) -> list[T]:
    """`n` items, going round `items` as often as needed."""
    return list(islice(cycle(items), n))


# --- boolean floods ---------------------------------------------------------------------------


def or_of_ne_over_every_version(specs: list[Spec]) -> SpecCriteria:
    unknown = [f"0.0.{i}-nowhere" for i in range(2000)]
    branches = [ne("version", v) for v in spread(values(specs, "version"), 3000) + unknown]
    return SpecCriteria(any_of=tuple(branches))


def or_of_one_ne_repeated(specs: list[Spec]) -> SpecCriteria:
    return SpecCriteria(any_of=(ne("version", values(specs, "version")[0]),) * 5000)


def and_of_ne_sparing_three_versions(specs: list[Spec]) -> SpecCriteria:
    excluded = spread(values(specs, "version")[3:], 5000)
    return SpecCriteria(all_of=tuple(ne("version", v) for v in excluded))


def or_of_ne_pairs_on_two_fields(specs: list[Spec]) -> SpecCriteria:
    """Branches that merge into no single leaf: each needs two fields."""
    pairs = zip(spread(values(specs, "version"), 4000), cycle(values(specs, "os")), strict=False)
    return SpecCriteria(
        any_of=tuple(
            SpecCriteria(fields=(("version", StringMatch(ne=v)), ("os", StringMatch(ne=o))))
            for v, o in pairs
        )
    )


def or_of_narrow_pairs_and_negations(specs: list[Spec]) -> SpecCriteria:
    """A union that is not everything: eq-version with ne-target, and some NOT eq."""
    targets = values(specs, "target")
    branches = [
        SpecCriteria(fields=(("version", StringMatch(eq=v)), ("target", StringMatch(ne=t))))
        for v, t in zip(values(specs, "version")[::2], cycle(targets), strict=False)
    ]
    negations = [SpecCriteria(not_=ne("os", o)) for o in values(specs, "os")[:2]]
    return SpecCriteria(any_of=tuple(spread(branches, 3000) + negations))


def and_of_ors_across_fields(specs: list[Spec]) -> SpecCriteria:
    """An AND of ORs that each mix two fields: tested on every candidate."""
    versions, compilers = values(specs, "version"), values(specs, "compiler")
    return SpecCriteria(
        all_of=tuple(
            SpecCriteria(any_of=(ne("version", v), eq("compiler", c)))
            for v, c in zip(
                spread(versions[: len(versions) // 3], 3000), cycle(compilers), strict=False
            )
        )
    )


FLOODS = [
    or_of_ne_over_every_version,
    or_of_one_ne_repeated,
    and_of_ne_sparing_three_versions,
    or_of_ne_pairs_on_two_fields,
    or_of_narrow_pairs_and_negations,
    and_of_ors_across_fields,
]


def traced(run: Callable[[], Any]) -> tuple[Any, float]:
    """What `run` returns, and the peak of memory it allocated (bytes, numpy's too)."""
    tracemalloc.start()
    try:
        result = run()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("flood", FLOODS, ids=lambda f: f.__name__)
def test_boolean_floods_answer_right_in_bounded_memory(
    snapshot: Snapshot, specs: list[Spec], flood: Callable[[list[Spec]], SpecCriteria]
) -> None:
    """Thousands of branches, each as broad as the tag: before, every branch's rows were
    held at once (5,000 `ne` over 20k specs: ~400 MB; 5.4 GB at 10,000 over 143k specs).
    Measured now: 1.3-3.7 MB peak."""
    criteria = flood(specs)
    rows, peak = traced(lambda: find_specs(snapshot, criteria))
    found = {snapshot.hash_of(int(row)) for row in rows}
    assert found == expected(specs, criteria)
    assert found, "a flood that matches nothing tests little"
    assert peak < 50 * MB


# --- search words -----------------------------------------------------------------------------


@pytest.mark.parametrize("length", [10_000, 100_000])
def test_a_long_search_word_costs_little(snapshot: Snapshot, length: int) -> None:
    """Base32 letters starting with a real hash: never a hash prefix (longer than any
    hash), never looked up in the text index. Before: 10 KB peaked at ~200 MB here (every
    hash copied at the word's width), 100 KB at ~2 GB. Measured now: < 0.1 MB, ~1 ms."""
    whole = snapshot.hash_of(0)
    word = (whole * (length // len(whole) + 1))[:length]
    start = time.perf_counter()
    (rows, packages), peak = traced(
        lambda: (find_specs(snapshot, search=word), find_packages(snapshot, search=word))
    )
    assert time.perf_counter() - start < 5
    assert len(rows) == len(packages) == 0
    assert peak < 5 * MB


def test_hash_words_up_to_a_hash_long(snapshot: Snapshot) -> None:
    """A whole hash as a word finds its spec; one more character, none."""
    whole = snapshot.hash_of(7)
    assert [snapshot.hash_of(int(r)) for r in find_specs(snapshot, search=whole)] == [whole]
    assert [snapshot.hash_of(int(r)) for r in find_specs(snapshot, search=whole[:9])] == [whole]
    assert len(find_specs(snapshot, search=whole + "a")) == 0
    assert find_spec(snapshot, whole) == 7


def test_a_search_has_a_bounded_number_of_words(snapshot: Snapshot) -> None:
    words = " ".join(["zlib"] * MAX_TERMS)
    assert len(find_specs(snapshot, search=words)) == len(find_specs(snapshot, search="zlib"))
    flood = " ".join(["zlib"] * 200_000)
    with pytest.raises(CriteriaError, match=f"at most {MAX_TERMS} words") as caught:
        find_specs(snapshot, search=flood)
    assert len(str(caught.value)) < 300


# --- error messages ---------------------------------------------------------------------------

MEGABYTE_OF_INPUT: list[tuple[str, Callable[[Snapshot, str], object], str]] = [
    ("hash longer than a hash", lambda s, x: find_spec(s, "a" * len(x)), "is longer"),
    ("search with a bad variant", lambda s, x: find_specs(s, search=f"v='{x}"), "unclosed"),
    ("search without words", lambda s, x: find_specs(s, search="-" * len(x)), "no words"),
    ("variant constraint", lambda s, x: parse_variant_constraint(f"v={x} x"), "required"),
    ("search of many words", lambda s, x: find_specs(s, search=x.replace("b", " ")), "words"),
]


@pytest.mark.parametrize(
    ("ask", "problem"),
    [(ask, problem) for _, ask, problem in MEGABYTE_OF_INPUT],
    ids=[name for name, _, _ in MEGABYTE_OF_INPUT],
)
def test_errors_quote_a_megabyte_of_input_shortened(
    snapshot: Snapshot, ask: Callable[[Snapshot, str], object], problem: str
) -> None:
    value = "ab" * 500_000
    with pytest.raises(CriteriaError, match=problem) as caught:
        ask(snapshot, value)
    message = str(caught.value)
    assert len(message) < 400, message[:400]
    assert "characters)" in message or len(message) < 200


def test_shorten_keeps_the_start_and_says_how_long() -> None:
    assert shorten("zlib") == "'zlib'"
    long = "x" * 1_000_000
    assert shorten(long) == f"{'x' * 80!r}... (1,000,000 characters)"
    assert shorten(long, limit=3) == "'xxx'... (1,000,000 characters)"


# --- the time budget --------------------------------------------------------------------------


def test_a_deadline_stops_a_heavy_query(snapshot: Snapshot, specs: list[Spec]) -> None:
    """An AND of 6,000 ORs over two fields tests most rows 6,000 times (~1 s here, ~7 s
    at 143k specs); under a 50 ms budget it stops within a few ms of it (measured:
    0.05-0.06 s)."""
    pairs = zip(spread(values(specs, "version"), 6000), cycle(values(specs, "os")), strict=False)
    criteria = SpecCriteria(
        all_of=tuple(SpecCriteria(any_of=(ne("version", v), ne("os", o))) for v, o in pairs)
    )
    start = time.perf_counter()
    with pytest.raises(OverBudgetError), deadline(0.05):
        find_specs(snapshot, criteria)
    assert time.perf_counter() - start < 1.05


def test_a_spent_budget_stops_search_and_facets(snapshot: Snapshot) -> None:
    rows = find_specs(snapshot)
    with pytest.raises(OverBudgetError), deadline(0):
        find_specs(snapshot, search="zlib cmake")
    with pytest.raises(OverBudgetError), deadline(0):
        Facets(snapshot, rows).buckets("stacks")
    assert Facets(snapshot, rows).buckets("stacks")  # without a deadline, nothing stops
