"""tagDiff: what changed between two tags, checked against the pages read independently.

Over HTTP, on the real corpus (every ordered pair of its tags, with and without a filter)
and on a synthetic index whose tags share most of their specs (demo pages and a tag
derived from them, `page_factory.derive_tag`: the corpus tags share none). Pagination is
walked to the end, over packages and over each package's specs. Then the errors, the
price of the field, and the work of the diff: it follows the two tags' columns in numpy,
never a Python step per spec, which is counted in executed lines rather than timed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from functools import partial
from itertools import product
from pathlib import Path
from types import FrameType
from typing import Any

import graphql
import pytest

from cachegql.demo import DemoConfig, write_pages
from cachegql.index import (
    IndexStore,
    OverBudgetError,
    SpecCriteria,
    StringMatch,
    build_index,
    deadline,
    size_bounds,
    tag_diff,
)
from cachegql.schema import Context, build_schema
from cachegql.schema.limits import CONDITION_COST, CONNECTION_COST, price
from cachegql.server.offload import runs_inline
from tests import oracle
from tests.conftest import GraphQLClient, serving
from tests.page_factory import DERIVED_STACK, derive_tag
from tests.test_api_queries import walk

Spec = dict[str, Any]
Expected = dict[str, dict[str, Spec]]
Filter = dict[str, Any] | None
Predicate = Callable[[Spec], bool]
CORPUS_TAGS = ["develop", "develop-2025-03-30", "v0.22.0"]
# (filter, what it means for a spec read from the pages)
FILTERS: dict[str, tuple[Filter, Predicate]] = {
    "none": (None, lambda s: True),
    "os-eq": ({"os": {"eq": "ubuntu22.04"}}, lambda s: s["os"] == "ubuntu22.04"),
    "compiler-prefix": (
        {"compiler": {"prefix": "gcc@1"}},
        lambda s: oracle.compiler_normalized(s["compiler"]).startswith("gcc@1"),
    ),
    "stack-eq": ({"stack": {"eq": DERIVED_STACK}}, lambda s: DERIVED_STACK in s["stacks"]),
}
CORPUS_FILTERS = {
    **{k: v for k, v in FILTERS.items() if k != "stack-eq"},
    "stack-prefix": (
        {"stack": {"prefix": "ml-"}},
        lambda s: any(x[:3] == "ml-" for x in s["stacks"]),
    ),
}

DIFF_QUERY = """
query($from: String!, $to: String!, $filter: SpecFilter, $first: Int, $after: String) {
  tagDiff(from: $from, to: $to, filter: $filter, first: $first, after: $after) {
    from to totalCount added removed unchanged
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    edges { cursor node { ...change } }
    nodes { ...change }
  }
}
fragment change on PackageDiff {
  name added removed unchanged
  addedSpecs(first: 100) { totalCount pageInfo { hasNextPage } nodes { hash name tag } }
  removedSpecs(first: 100) { totalCount pageInfo { hasNextPage } nodes { hash name tag } }
}
"""
# One package's added or removed specs (SIDE), page by page.
SIDE_QUERY = """
query($from: String!, $to: String!, $filter: SpecFilter, $first: Int, $after: String) {
  tagDiff(from: $from, to: $to, filter: $filter, first: 1) {
    nodes { name SIDE(first: $first, after: $after) {
      totalCount
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      edges { cursor node { hash name tag } }
      nodes { hash name tag }
    } }
  }
}
"""


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synthetic_pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Demo pages (develop and v0.23.0, 20k specs) and `next`, derived from develop."""
    folder = tmp_path_factory.mktemp("tagdiff") / "pages"
    write_pages(DemoConfig(specs=20_000), folder)
    derive_tag(folder, "develop", "next")
    return folder


@pytest.fixture(scope="module")
def synthetic_index(synthetic_pages: Path) -> Path:
    out = synthetic_pages.parent / "ix"
    build_index([synthetic_pages], out)
    return out


@pytest.fixture(scope="module")
def synthetic_expected(synthetic_pages: Path) -> Expected:
    return oracle.read_specs([synthetic_pages])


@pytest.fixture(scope="module")
def synthetic_gql(synthetic_index: Path) -> Iterator[GraphQLClient]:
    with serving(synthetic_index) as client:
        yield client


# --- what the API says, and what the pages say --------------------------------------------------


def variables(old: str, new: str, filter: Filter = None) -> dict[str, Any]:
    return {"from": old, "to": new, "filter": filter}


def side_hashes(
    gql: GraphQLClient, old: str, new: str, filter: Filter, package: str, side: str, size: int
) -> list[str]:
    """Every hash of one package's `side` (addedSpecs or removedSpecs), page by page."""
    only = {"package": {"eq": package}}
    narrowed = only if filter is None else {"and": [filter, only]}
    query = SIDE_QUERY.replace("SIDE", side)
    _, nodes = walk(
        gql, query, ("tagDiff", "nodes", 0, side), size, **variables(old, new, narrowed)
    )
    tag = new if side == "addedSpecs" else old
    assert {(n["name"], n["tag"]) for n in nodes} <= {(package, tag)}
    return [n["hash"] for n in nodes]


def api_diff(
    gql: GraphQLClient, old: str, new: str, filter: Filter = None, page_size: int = 100
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(totals, {package: {added, removed: hashes, unchanged: count}}) as the API answers,
    every page walked; a package's specs past the first 100 are walked too."""
    totals = gql.data(DIFF_QUERY, first=0, after=None, **variables(old, new, filter))["tagDiff"]
    total, nodes = walk(gql, DIFF_QUERY, ("tagDiff",), page_size, **variables(old, new, filter))
    assert total == totals["totalCount"]
    packages = {}
    for node in nodes:
        sides = {}
        for side, tag, count in (("addedSpecs", new, "added"), ("removedSpecs", old, "removed")):
            connection = node[side]
            assert connection["totalCount"] == node[count]
            hashes = [n["hash"] for n in connection["nodes"]]
            assert {(n["name"], n["tag"]) for n in connection["nodes"]} <= {(node["name"], tag)}
            if connection["pageInfo"]["hasNextPage"]:
                hashes = side_hashes(gql, old, new, filter, node["name"], side, 100)
            assert hashes == sorted(hashes) and len(hashes) == node[count]
            sides[count] = hashes
        packages[node["name"]] = {**sides, "unchanged": node["unchanged"]}
    return {k: v for k, v in totals.items() if k not in ("pageInfo", "edges", "nodes")}, packages


def expected_diff(
    expected: Expected, old: str, new: str, holds: Predicate
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The same, from the pages: each side's specs that match in that side's tag."""
    before = {h: s for h, s in expected[old].items() if holds(s)}
    after = {h: s for h, s in expected[new].items() if holds(s)}
    packages = oracle.tag_diff(before, after)
    totals = {
        "from": old,
        "to": new,
        "totalCount": len(packages),
        "added": len(after.keys() - before.keys()),
        "removed": len(before.keys() - after.keys()),
        "unchanged": len(before.keys() & after.keys()),
    }
    return totals, packages


def check_diff(
    gql: GraphQLClient, expected: Expected, old: str, new: str, case: tuple[Filter, Predicate]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    filter, holds = case
    want = expected_diff(expected, old, new, holds)
    got = api_diff(gql, old, new, filter)
    assert got == want
    assert list(got[1]) == list(want[1])  # by name
    return got


# --- against the oracle -------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("old,new", list(product(CORPUS_TAGS, repeat=2)))
@pytest.mark.parametrize("case", list(CORPUS_FILTERS), ids=str)
def test_corpus_diff_matches_the_pages(
    corpus_gql: GraphQLClient, corpus_expected: Expected, old: str, new: str, case: str
) -> None:
    totals, packages = check_diff(corpus_gql, corpus_expected, old, new, CORPUS_FILTERS[case])
    if old == new:
        assert packages == {} and totals["added"] == totals["removed"] == 0
    elif case == "none":
        assert totals["added"] == len(corpus_expected[new]) - totals["unchanged"] > 0


@pytest.mark.parametrize(
    "old,new,case",
    [(*pair, case) for pair in product(["develop", "next"], repeat=2) for case in FILTERS]
    + [("develop", "v0.23.0", "compiler-prefix"), ("v0.23.0", "next", "stack-eq")],
)
def test_synthetic_diff_matches_the_pages(
    synthetic_gql: GraphQLClient, synthetic_expected: Expected, old: str, new: str, case: str
) -> None:
    check_diff(synthetic_gql, synthetic_expected, old, new, FILTERS[case])


def test_the_synthetic_tags_change_in_every_way(synthetic_expected: Expected) -> None:
    """The derived tag keeps most specs and adds, removes and moves some: the cases above
    meet unchanged specs, partly changed packages, and a filter that holds on one side."""
    totals, packages = expected_diff(synthetic_expected, "develop", "next", lambda s: True)
    assert totals["unchanged"] > 2 * (totals["added"] + totals["removed"]) > 0
    assert any(p["added"] and p["unchanged"] for p in packages.values())
    assert any(p["removed"] and p["unchanged"] for p in packages.values())
    assert any(p["removed"] and not p["unchanged"] for p in packages.values())
    moved = expected_diff(synthetic_expected, "develop", "next", FILTERS["stack-eq"][1])[0]
    assert moved["added"] > 0 and moved["removed"] == moved["unchanged"] == 0


# --- pagination ---------------------------------------------------------------------------------


@pytest.mark.parametrize("page_size", [1, 7])
def test_packages_walked_to_the_end(
    synthetic_gql: GraphQLClient, synthetic_expected: Expected, page_size: int
) -> None:
    want = expected_diff(synthetic_expected, "develop", "next", lambda s: True)[1]
    total, nodes = walk(
        synthetic_gql, DIFF_QUERY, ("tagDiff",), page_size, **variables("develop", "next")
    )
    assert total == len(want) and [n["name"] for n in nodes] == list(want)


@pytest.mark.parametrize("side", ["addedSpecs", "removedSpecs"])
def test_specs_of_a_package_walked_to_the_end(
    synthetic_gql: GraphQLClient, synthetic_expected: Expected, side: str
) -> None:
    """The package with the most specs on that side (over a hundred: a package left out of
    `next`, diffed from `next` back to `develop` or the other way)."""
    old, new = ("next", "develop") if side == "addedSpecs" else ("develop", "next")
    packages = expected_diff(synthetic_expected, old, new, lambda s: True)[1]
    count = "added" if side == "addedSpecs" else "removed"
    name = max(packages, key=lambda p: len(packages[p][count]))
    assert len(packages[name][count]) > 100
    assert side_hashes(synthetic_gql, old, new, None, name, side, 7) == packages[name][count]


def test_cursors_are_bound_to_their_query(synthetic_gql: GraphQLClient) -> None:
    page = synthetic_gql.data(DIFF_QUERY, first=2, after=None, **variables("develop", "next"))
    cursor = page["tagDiff"]["pageInfo"]["endCursor"]
    for other in (variables("next", "develop"), variables("develop", "next", FILTERS["os-eq"][0])):
        error = synthetic_gql.error(DIFF_QUERY, first=2, after=cursor, **other)
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert "another query" in error["message"]


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("old,new", [("no-such-tag", "develop"), ("develop", "no-such-tag")])
def test_unknown_tag_is_bad_user_input(gql: GraphQLClient, old: str, new: str) -> None:
    error = gql.error(DIFF_QUERY, first=5, after=None, **variables(old, new))
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "unknown tag 'no-such-tag'" in error["message"]
    assert error["path"] == ["tagDiff"]


def test_filter_errors_are_bad_user_input(gql: GraphQLClient) -> None:
    """A filter the pages cannot answer (they record no dependencies) is refused, not empty."""
    depends = {"dependsOn": {"package": {"eq": "zlib"}}}
    error = gql.error(DIFF_QUERY, first=5, after=None, **variables("v0.22.0", "develop", depends))
    assert error["extensions"]["code"] == "BAD_USER_INPUT"


# --- cost ---------------------------------------------------------------------------------------


def cost(index: Path, query: str) -> int:
    schema = build_schema()._schema
    document = graphql.parse(query)
    operation = document.definitions[0]
    assert isinstance(operation, graphql.OperationDefinitionNode)
    store = IndexStore(index)
    try:
        return price(schema, operation, {}, {}, size_bounds(store)).cost
    finally:
        store.close()


def test_tag_diff_is_priced(synthetic_index: Path) -> None:
    """Two queries over the index (one per tag) and its filter on each side; its packages
    as a page; each package's spec lists as connections of their own."""
    base = '{ tagDiff(from: "develop", to: "next"FILTER) { totalCount } }'
    bare = cost(synthetic_index, base.replace("FILTER", ""))
    assert bare >= 2 * CONNECTION_COST
    condition = ', filter: { os: { eq: "x" } }'
    filtered = cost(synthetic_index, base.replace("FILTER", condition))
    specs = '{ specs(tag: "develop"FILTER) { totalCount } }'
    one_side = cost(synthetic_index, specs.replace("FILTER", condition)) - cost(
        synthetic_index, specs.replace("FILTER", "")
    )
    assert filtered - bare == 2 * one_side >= 2 * CONDITION_COST
    nested = """{ tagDiff(from: "develop", to: "next", first: 100) {
        nodes { addedSpecs(first: 100) { nodes { hash name version os } } } } }"""
    assert cost(synthetic_index, nested) > 100 * (CONNECTION_COST + 100 * 4)
    assert not runs_inline(base.replace("FILTER", ""))  # in a worker thread, with its budget


def test_an_expensive_diff_is_refused_before_it_runs(synthetic_index: Path) -> None:
    query = """{ tagDiff(from: "develop", to: "next", first: 100) {
        nodes { addedSpecs(first: 100) { nodes { hash variants { raw } stacks } } }
        edges { node { removedSpecs(first: 100) { nodes { hash versions } } } } } }"""
    store = IndexStore(synthetic_index)
    try:
        result = build_schema(max_cost=100_000).execute_sync(
            query, context_value=Context(store=store)
        )
    finally:
        store.close()
    assert result.data is None and result.errors
    assert result.errors[0].extensions is not None
    assert result.errors[0].extensions["code"] == "QUERY_TOO_COMPLEX"


def executed_lines(work: Callable[[], object]) -> int:
    """How many lines of Python code `work` executes (numpy's own Python code included)."""
    count = 0

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return trace

    previous = sys.gettrace()  # coverage's tracer, under `make coverage`
    sys.settrace(trace)
    try:
        work()
    finally:
        sys.settrace(previous)
    return count


def test_the_diff_takes_no_python_step_per_spec(synthetic_index: Path, pages_index: Path) -> None:
    """A diff of ~15k specs executes as many Python lines as one of a few dozen: its work
    is in numpy. (Measured: the same 242 lines each, 344 filtered; a loop over the specs
    would add 15k or more.)"""
    large, small = IndexStore(synthetic_index), IndexStore(pages_index)
    try:
        for criteria in (None, SpecCriteria(fields=(("os", StringMatch(ne="x")),))):
            big = partial(tag_diff, large.snapshot("develop"), large.snapshot("next"), criteria)
            tiny = partial(tag_diff, small.snapshot("v0.22.0"), small.snapshot("develop"), criteria)
            diff = big()
            specs = diff.num_added + diff.num_removed + diff.num_unchanged
            assert specs > 10_000 and len(diff.names) > 10
            assert executed_lines(big) <= executed_lines(tiny) + 50 < specs // 20
    finally:
        large.close()
        small.close()


def test_the_diff_honours_the_time_budget(synthetic_index: Path) -> None:
    store = IndexStore(synthetic_index)
    try:
        with pytest.raises(OverBudgetError), deadline(-1.0):
            tag_diff(store.snapshot("develop"), store.snapshot("next"))
    finally:
        store.close()
