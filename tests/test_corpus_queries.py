"""The core query checks of test_api_queries.py, run on the real pages of ../shared.

The same filter tables and oracle functions, over every tag of cache.spack.io's corpus and
the seed pages. Skips with a message where ../shared is absent; fails instead when CI=true.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests import oracle
from tests import oracle_queries as oq
from tests.conftest import GraphQLClient
from tests.test_api_queries import (
    FACETS_QUERY,
    SPECS_QUERY,
    check_ambiguous,
    check_facets,
    check_hash_forms,
    check_package_filter,
    check_spec_filter,
    check_stacks,
    walk_packages,
    walk_specs,
)

pytestmark = pytest.mark.corpus
Expected = dict[str, dict[str, dict[str, Any]]]
TAGS = ["develop", "develop-2025-03-30", "v0.22.0"]
SPEC_CASES = [c for c in oq.SPEC_FILTERS if c.corpus]
PACKAGE_CASES = [c for c in oq.PACKAGE_FILTERS if c.corpus]
FACET_CASES = [
    oq.spec_case(i)
    for i in (
        "everything",
        "compiler-eq-normalized",
        "stack-prefix",
        "variant-plus",
        "or",
        "not-variant-includes-specs-without-it",
    )
]


def test_the_corpus_has_the_tags(corpus_expected: Expected) -> None:
    assert sorted(corpus_expected) == TAGS
    assert len(corpus_expected["develop"]) > 100  # enough for the page cap


@pytest.mark.parametrize("tag", TAGS)
@pytest.mark.parametrize("case", SPEC_CASES, ids=lambda c: c.id)
def test_spec_filter(
    corpus_gql: GraphQLClient, corpus_expected: Expected, tag: str, case: oq.SpecCase
) -> None:
    check_spec_filter(corpus_gql, corpus_expected, tag, case)


def test_spec_filters_meet_the_corpus(corpus_expected: Expected) -> None:
    """The corpus rows of the table select something somewhere, and not everything."""
    specs = [s for tag in TAGS for s in corpus_expected[tag].values()]
    for case_id in (
        "compiler-eq-normalized",
        "variant-value-of-libs",
        "variant-quoted-values",
        "stack-prefix-contains",
        "hash-prefix",
        "nested-and-or-not",
    ):
        assert 0 < sum(map(oq.spec_case(case_id).holds, specs)) < len(specs), case_id
    raw = {s["compiler"] for s in corpus_expected["develop"].values()}
    assert {"gcc@11.4.0", "gcc@=11.4.0"} <= raw


@pytest.mark.parametrize("tag", TAGS)
@pytest.mark.parametrize("case", PACKAGE_CASES, ids=lambda c: c.id)
def test_package_filter(
    corpus_gql: GraphQLClient, corpus_expected: Expected, tag: str, case: oq.PackageCase
) -> None:
    check_package_filter(corpus_gql, corpus_expected, tag, case)


@pytest.mark.parametrize("tag", TAGS)
def test_packages_has_spec(corpus_gql: GraphQLClient, corpus_expected: Expected, tag: str) -> None:
    for case in SPEC_CASES:
        want = sorted({s["name"] for s in corpus_expected[tag].values() if case.holds(s)})
        total, names = walk_packages(corpus_gql, 100, tag=tag, filter={"hasSpec": case.filter})
        assert (total, names) == (len(want), want), case.id


@pytest.mark.parametrize("tag", TAGS)
@pytest.mark.parametrize("case", FACET_CASES, ids=lambda c: c.id)
def test_facets(
    corpus_gql: GraphQLClient, corpus_expected: Expected, tag: str, case: oq.SpecCase
) -> None:
    check_facets(corpus_gql, corpus_expected, tag, case)


def test_facets_of_a_search(corpus_gql: GraphQLClient, corpus_expected: Expected) -> None:
    scatter = [s for s in corpus_expected["develop"].values() if s["name"] == "py-torch-scatter"]
    data = corpus_gql.data(FACETS_QUERY, tag="develop", search="torch scatter")["specs"]
    assert data["totalCount"] == len(scatter)
    assert data["facets"] == oq.facets(scatter)


@pytest.mark.parametrize("tag", TAGS)
def test_stacks_and_stack_by_name(
    corpus_gql: GraphQLClient, corpus_expected: Expected, tag: str
) -> None:
    check_stacks(corpus_gql, corpus_expected, tag)
    specs = list(corpus_expected[tag].values())
    names = oq.stack_names(specs)
    fields = " ".join(
        f's{i}: stack(name: "{name}", tag: $tag) {{ name numSpecs numPackages '
        "compilers { value count } oss { value count } platforms { value count } "
        "targets { value count } }"
        for i, name in enumerate(names)
    )
    data = corpus_gql.data(f"query($tag: String) {{ {fields} }}", tag=tag)
    for i, name in enumerate(names):
        assert data[f"s{i}"] == oq.stack_summary(specs, name)


@pytest.mark.parametrize("tag", TAGS)
def test_stack_specs_with_a_filter(
    corpus_gql: GraphQLClient, corpus_expected: Expected, tag: str
) -> None:
    specs = list(corpus_expected[tag].values())
    case = oq.spec_case("compiler-prefix")
    data = corpus_gql.data(
        """query($tag: String, $f: SpecFilter) { stacks(tag: $tag) { name
             specs(filter: $f, first: 100) { totalCount nodes { hash } } } }""",
        tag=tag,
        f=case.filter,
    )
    for stack in data["stacks"]:
        mine = [s for s in specs if stack["name"] in s["stacks"] and case.holds(s)]
        assert stack["specs"]["totalCount"] == len(mine), stack["name"]
        assert [n["hash"] for n in stack["specs"]["nodes"]] == oq.ordered(mine)[:100]


@pytest.mark.parametrize("tag", TAGS)
def test_every_spec_resolves_by_hash_and_prefix(
    corpus_gql: GraphQLClient, corpus_expected: Expected, tag: str
) -> None:
    check_hash_forms(corpus_gql, corpus_expected, tag)


@pytest.mark.parametrize("tag", TAGS)
def test_ambiguous_prefixes(corpus_gql: GraphQLClient, corpus_expected: Expected, tag: str) -> None:
    specs = list(corpus_expected[tag].values())
    prefixes = oq.ambiguous_prefixes(corpus_expected[tag])
    # The most shared one-character prefix (usually more than 10) and a few longer ones.
    chosen = sorted(prefixes, key=lambda p: (-prefixes[p], p))[:1]
    chosen += sorted(p for p in prefixes if len(p) > 1)[:5]
    for prefix in chosen:
        check_ambiguous(corpus_gql, specs, prefix, tag)
        total, hashes = walk_specs(corpus_gql, 100, tag=tag, filter={"hashPrefix": prefix})
        assert (total, hashes) == (
            prefixes[prefix],
            oq.ordered(s for s in specs if s["hash"].startswith(prefix)),
        )


def test_ambiguous_prefix_with_more_than_ten(
    corpus_gql: GraphQLClient, corpus_expected: Expected
) -> None:
    specs = list(corpus_expected["develop"].values())
    prefixes = oq.ambiguous_prefixes(corpus_expected["develop"])
    prefix = max(prefixes, key=lambda p: prefixes[p])
    assert prefixes[prefix] > 10
    error = corpus_gql.error("query($h: String!) { spec(hash: $h) { hash } }", h=prefix)
    assert error["extensions"]["count"] == prefixes[prefix]
    assert len(error["extensions"]["candidates"]) == 10
    check_ambiguous(corpus_gql, specs, prefix.upper(), None)


def test_seed_hash_prefix_in_develop(corpus_gql: GraphQLClient) -> None:
    full = "22xi27urdwtvpyoa6tufkwn4rzdkfyeq"
    data = corpus_gql.data(
        """{ a: spec(hash: "/22xi27u") { hash name } b: spec(hash: "/22XI27U", tag: "develop") {
             hash } c: spec(hash: "22xi27u", tag: "v0.22.0") { hash } }"""
    )
    assert data == {"a": {"hash": full, "name": "py-torch-scatter"}, "b": {"hash": full}, "c": None}
    assert walk_specs(corpus_gql, 100, filter={"hashPrefix": "/22xi27u"}) == (1, [full])


@pytest.mark.parametrize("text", ["torch scatter", "scater", "scatterr", "torch scater"])
def test_search_finds_py_torch_scatter(
    corpus_gql: GraphQLClient, corpus_expected: Expected, text: str
) -> None:
    for tag in TAGS:
        want = [s for s in corpus_expected[tag].values() if s["name"] == "py-torch-scatter"]
        total, names = walk_packages(corpus_gql, 100, tag=tag, search=text)
        assert (total, names) == ((1, ["py-torch-scatter"]) if want else (0, [])), tag
        total, hashes = walk_specs(corpus_gql, 100, tag=tag, search=text)
        assert total == len(want) and sorted(hashes) == sorted(s["hash"] for s in want), tag


def test_search_relevance_puts_the_exact_name_first(
    corpus_gql: GraphQLClient, corpus_expected: Expected
) -> None:
    for tag in TAGS:
        for name in sorted({s["name"] for s in corpus_expected[tag].values()}):
            names = walk_packages(corpus_gql, 100, tag=tag, search=name)[1]
            assert names[0] == name, (tag, name, names[:5])
    names = walk_packages(corpus_gql, 100, search="zlib")[1]
    assert names[0] == "zlib"
    assert len(names) > 1  # zlib is also a variant of other packages: they rank after it


def test_search_variant_and_hash_terms(
    corpus_gql: GraphQLClient, corpus_expected: Expected
) -> None:
    specs = corpus_expected["develop"]
    pic = {h for h, s in specs.items() if oq.has_variants(s, "+pic")}
    static = {h for h, s in specs.items() if "libs=static" in oracle.spec_atoms(s)}
    assert pic and static
    assert set(walk_specs(corpus_gql, 100, search="+pic")[1]) == pic
    assert set(walk_specs(corpus_gql, 100, search="libs=static")[1]) == static
    assert walk_specs(corpus_gql, 100, search="22xi27u")[1] == ["22xi27urdwtvpyoa6tufkwn4rzdkfyeq"]
    got = walk_specs(corpus_gql, 100, search="scatter", filter={"target": {"eq": "aarch64"}})[1]
    assert set(got) == {
        h for h, s in specs.items() if s["name"] == "py-torch-scatter" and s["target"] == "aarch64"
    }
    assert walk_specs(corpus_gql, 100, search="qqqqqqqzzz nosuchword")[0] == 0


@pytest.mark.parametrize("tag", TAGS)
@pytest.mark.parametrize("page_size", [7, 100])
def test_pagination_walk(
    corpus_gql: GraphQLClient, corpus_expected: Expected, tag: str, page_size: int
) -> None:
    specs = list(corpus_expected[tag].values())
    total, hashes = walk_specs(corpus_gql, page_size, tag=tag)
    assert total == len(specs) == len(set(hashes)) and hashes == oq.ordered(specs)
    total, names = walk_packages(corpus_gql, max(1, page_size // 7), tag=tag)
    assert names == list(oq.by_package(specs)) and total == len(names)


def test_pagination_walk_one_by_one(corpus_gql: GraphQLClient, corpus_expected: Expected) -> None:
    specs = list(corpus_expected["v0.22.0"].values())
    assert walk_specs(corpus_gql, 1, tag="v0.22.0") == (len(specs), oq.ordered(specs))
    case = oq.spec_case("variant-plus")
    want = oq.ordered(s for s in corpus_expected["develop"].values() if case.holds(s))
    assert walk_specs(corpus_gql, 3, filter=case.filter) == (len(want), want)


def test_first_above_the_cap(corpus_gql: GraphQLClient, corpus_expected: Expected) -> None:
    order = oq.ordered(corpus_expected["develop"].values())
    page = corpus_gql.data(SPECS_QUERY, first=101, after=None)["specs"]
    assert [n["hash"] for n in page["nodes"]] == order[:100]
    assert page["pageInfo"]["hasNextPage"] is True
    assert page["totalCount"] == len(order)
    page = corpus_gql.data(SPECS_QUERY, first=0, after=None)["specs"]
    assert page["nodes"] == [] and page["pageInfo"]["hasNextPage"] is True
