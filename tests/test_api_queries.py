"""The query contract over HTTP: filters, packages, pagination, facets, stacks, hashes, search.

Every expected value is computed here from the pages (tests.oracle) and tests.oracle_queries,
never from the index code. Connections are walked to the end and compared in full.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cachegql.index import build_index
from tests import oracle
from tests import oracle_queries as oq
from tests.conftest import GraphQLClient, serving

Expected = dict[str, dict[str, dict[str, Any]]]
Spec = dict[str, Any]

# Tags as the tests pass them: None means "leave it to the default" (develop).
TAGS = [None, "v0.22.0"]
TAG_IDS = ["default-tag", "v0.22.0"]

PAGE_FIELDS = """totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"""

SPECS_QUERY = f"""
query($tag: String, $filter: SpecFilter, $search: String, $first: Int, $after: String) {{
  specs(tag: $tag, filter: $filter, search: $search, first: $first, after: $after) {{
    {PAGE_FIELDS} edges {{ cursor node {{ hash }} }} nodes {{ hash }} }} }}"""

PACKAGES_QUERY = f"""
query($tag: String, $filter: PackageFilter, $search: String, $first: Int, $after: String) {{
  packages(tag: $tag, filter: $filter, search: $search, first: $first, after: $after) {{
    {PAGE_FIELDS} edges {{ cursor node {{ name }} }} nodes {{ name }} }} }}"""

STACK_SPECS_QUERY = f"""
query($tag: String, $stack: String!, $filter: SpecFilter, $first: Int, $after: String) {{
  stack(name: $stack, tag: $tag) {{ specs(filter: $filter, first: $first, after: $after) {{
    {PAGE_FIELDS} edges {{ cursor node {{ hash }} }} nodes {{ hash }} }} }} }}"""

PACKAGE_SPECS_QUERY = f"""
query($tag: String, $name: String!, $filter: SpecFilter, $first: Int, $after: String) {{
  package(name: $name, tag: $tag) {{ specs(filter: $filter, first: $first, after: $after) {{
    {PAGE_FIELDS} edges {{ cursor node {{ hash }} }} nodes {{ hash }} }} }} }}"""

FACETS_QUERY = """
query($tag: String, $filter: SpecFilter, $search: String) {
  specs(tag: $tag, filter: $filter, search: $search, first: 1) { totalCount nodes { hash }
    facets { compilers { value count } oss { value count } platforms { value count }
             targets { value count } stacks { value count } versions { value count }
             packages { value count } } } }"""

STACK_FIELDS = """name tag numSpecs numPackages compilers { value count } oss { value count }
  platforms { value count } targets { value count }"""


# --- helpers --------------------------------------------------------------------------------------


def tag_of(tag: str | None) -> str:
    return tag or "develop"


def walk(
    gql: GraphQLClient, query: str, path: tuple[str | int, ...], page_size: int, **variables: Any
) -> tuple[int, list[dict[str, Any]]]:
    """(totalCount, every node) of a connection, checking the shape of every page on the way."""
    nodes: list[dict[str, Any]] = []
    after = None
    total: int | None = None
    for _ in range(10_000):
        connection: Any = gql.data(query, first=page_size, after=after, **variables)
        for key in path:
            connection = connection[key]
        if total is None:
            total = connection["totalCount"]
        assert connection["totalCount"] == total, "totalCount changed between pages"
        edges, info = connection["edges"], connection["pageInfo"]
        assert [e["node"] for e in edges] == connection["nodes"]
        assert len(edges) == min(page_size, total - len(nodes)), (len(nodes), info)
        assert info["hasPreviousPage"] == bool(nodes)
        if edges:
            assert info["startCursor"] == edges[0]["cursor"]
            assert info["endCursor"] == edges[-1]["cursor"]
        else:
            assert info["startCursor"] is None and info["endCursor"] is None
        nodes.extend(connection["nodes"])
        assert info["hasNextPage"] == (len(nodes) < total)
        if not info["hasNextPage"]:
            return total, nodes
        after = info["endCursor"]
    raise AssertionError("pagination did not end")


def walk_specs(gql: GraphQLClient, page_size: int = 100, **variables: Any) -> tuple[int, list[str]]:
    total, nodes = walk(gql, SPECS_QUERY, ("specs",), page_size, **variables)
    return total, [n["hash"] for n in nodes]


def walk_packages(
    gql: GraphQLClient, page_size: int = 100, **variables: Any
) -> tuple[int, list[str]]:
    total, nodes = walk(gql, PACKAGES_QUERY, ("packages",), page_size, **variables)
    return total, [n["name"] for n in nodes]


def matching(expected: Expected, tag: str | None, case: oq.SpecCase) -> list[Spec]:
    return [s for s in expected.get(tag_of(tag), {}).values() if case.holds(s)]


def matching_packages(expected: Expected, tag: str | None, case: oq.PackageCase) -> list[str]:
    packages = oq.by_package(expected.get(tag_of(tag), {}).values())
    return [name for name, specs in packages.items() if case.holds(name, specs)]


def assert_names_character(message: str, char: str) -> None:
    assert any(f"{q}{char}{q}" in message for q in "'\"`"), message


def check_spec_filter(
    gql: GraphQLClient, expected: Expected, tag: str | None, case: oq.SpecCase
) -> None:
    want = matching(expected, tag, case)
    total, hashes = walk_specs(gql, 7, tag=tag, filter=case.filter)
    assert total == len(want)
    assert hashes == oq.ordered(want)


def check_package_filter(
    gql: GraphQLClient, expected: Expected, tag: str | None, case: oq.PackageCase
) -> None:
    want = matching_packages(expected, tag, case)
    total, names = walk_packages(gql, 3, tag=tag, filter=case.filter)
    assert total == len(want)
    assert names == want


def check_facets(
    gql: GraphQLClient, expected: Expected, tag: str | None, case: oq.SpecCase
) -> None:
    want = matching(expected, tag, case)
    data = gql.data(FACETS_QUERY, tag=tag, filter=case.filter)["specs"]
    assert data["totalCount"] == len(want)
    assert len(data["nodes"]) == min(1, len(want))
    assert data["facets"] == oq.facets(want)


def check_stacks(gql: GraphQLClient, expected: Expected, tag: str | None) -> None:
    specs = list(expected[tag_of(tag)].values())
    data = gql.data(f"query($tag: String) {{ stacks(tag: $tag) {{ {STACK_FIELDS} }} }}", tag=tag)
    assert data["stacks"] == [
        dict(oq.stack_summary(specs, name), tag=tag_of(tag)) for name in oq.stack_names(specs)
    ]


def check_hash_forms(gql: GraphQLClient, expected: Expected, tag: str | None) -> None:
    """Every spec of the tag by full hash, unique prefix, upper case and leading '/'."""
    hashes = sorted(expected[tag_of(tag)])
    forms: list[tuple[str, str]] = []
    for full in hashes:
        prefix = oq.shortest_unique_prefix(hashes, full)
        forms += [(full, full), (prefix, full), (prefix.upper(), full), ("/" + prefix, full)]
    for start in range(0, len(forms), 100):
        chunk = forms[start : start + 100]
        fields = " ".join(
            f"h{i}: spec(hash: {json.dumps(text)}, tag: $tag) {{ hash tag }}"
            for i, (text, _) in enumerate(chunk)
        )
        data = gql.data(f"query($tag: String) {{ {fields} }}", tag=tag)
        for i, (text, full) in enumerate(chunk):
            assert data[f"h{i}"] == {"hash": full, "tag": tag_of(tag)}, text


def check_ambiguous(gql: GraphQLClient, specs: list[Spec], prefix: str, tag: str | None) -> None:
    matches = oq.hash_matches(specs, prefix)
    assert len(matches) > 1, "the test needs an ambiguous prefix"
    body = gql(
        "query($h: String!, $tag: String) { spec(hash: $h, tag: $tag) { hash } }", h=prefix, tag=tag
    )
    assert body["data"] == {"spec": None} or body.get("data") is None
    (error,) = body["errors"]
    extensions = error["extensions"]
    assert extensions["code"] == "AMBIGUOUS_HASH_PREFIX"
    assert extensions["count"] == len(matches)
    candidates = extensions["candidates"]
    assert len(candidates) == min(10, len(matches))
    assert len(set(candidates)) == len(candidates)
    assert set(candidates) <= set(matches)
    assert error["message"]


# --- a larger synthetic index: the page cap and long candidate lists ------------------------------

BULK_SPECS = 130
BULK_SHARED_PREFIX = "qqqq"
BULK_SHARED_COUNT = 15


def _bulk_hash(seed: str, prefix: str = "") -> str:
    text = base64.b32encode(hashlib.sha1(seed.encode()).digest()).decode().lower()
    return (prefix + text)[:32]


def _bulk_pages(folder: Path) -> None:
    """Two packages, 130 specs, 15 of them sharing the hash prefix 'qqqq'."""
    folder.mkdir(parents=True)
    specs: dict[str, list[dict[str, Any]]] = {"bulk-a": [], "bulk-b": []}
    for i in range(BULK_SPECS):
        name = "bulk-a" if i % 3 else "bulk-b"
        prefix = BULK_SHARED_PREFIX if i < BULK_SHARED_COUNT else ""
        specs[name].append(
            {
                "compiler": "gcc@=13.2.0" if i % 2 else "gcc@13.2.0",
                "hash": _bulk_hash(f"bulk{i}", prefix),
                "os": "ubuntu24.04",
                "platform": "linux",
                "size": "-",
                "stacks": ["root", "e4s" if i % 5 else "hep"],
                "target": "x86_64_v3",
                "variants": ["+mpi" if i % 2 else "~mpi", "build_system=cmake"],
                "versions": [f"1.{i % 4}.0"],
            }
        )
    for name, details in specs.items():
        text = "\n".join(
            [
                "---",
                f'title: "{name}"',
                "layout: cache",
                "categories: [package, develop]",
                f"spec_details: {json.dumps(details)}",
                "---",
                "",
            ]
        )
        (folder / f"{name}.md").write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def bulk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GraphQLClient, Expected]]:
    root = tmp_path_factory.mktemp("bulk")
    _bulk_pages(root / "pages")
    build_index([root / "pages"], root / "ix")
    with serving(root / "ix") as client:
        yield client, oracle.read_specs([root / "pages"])


# --- Query.specs: the filter table ----------------------------------------------------------------


@pytest.mark.parametrize("tag", TAGS, ids=TAG_IDS)
@pytest.mark.parametrize("case", oq.SPEC_FILTERS, ids=lambda c: c.id)
def test_spec_filter(
    gql: GraphQLClient, expected: Expected, tag: str | None, case: oq.SpecCase
) -> None:
    check_spec_filter(gql, expected, tag, case)


def test_spec_filter_table_is_discriminating(expected: Expected) -> None:
    """Guards the table itself: on develop most rows select some specs but not all."""
    specs = list(expected["develop"].values())
    partial = [c.id for c in oq.SPEC_FILTERS if 0 < sum(map(c.holds, specs)) < len(specs)]
    assert len(partial) >= len(oq.SPEC_FILTERS) * 2 // 3
    for case_id in (
        "variant-single-of-multi-valued",
        "variant-colon-equals-on-page",
        "compiler-eq-normalized",
        "not-variant-includes-specs-without-it",
    ):
        assert case_id in partial


def test_spec_filter_on_explicit_develop_equals_default(gql: GraphQLClient) -> None:
    case = oq.spec_case("variant-plus")
    assert walk_specs(gql, tag="develop", filter=case.filter) == walk_specs(gql, filter=case.filter)


def test_malformed_variant_is_a_user_error(gql: GraphQLClient) -> None:
    for bad in ("mpi", "cuda_arch=", "+"):
        error = gql.error(SPECS_QUERY, filter={"variants": [bad]}, first=1, after=None)
        assert error["extensions"]["code"] == "BAD_USER_INPUT", bad


@pytest.mark.parametrize(
    "variables",
    [
        {"filter": {"nope": 1}},
        {"filter": {"package": {"equals": "hdf5"}}},
        {"filter": {"package": "hdf5"}},
        {"first": "ten"},
        {"first": 2**40},
        {"tag": 5},
    ],
    ids=[
        "unknown-field",
        "unknown-operator",
        "string-for-object",
        "first-string",
        "first-huge",
        "tag-int",
    ],
)
def test_invalid_variable_values_are_user_errors(
    gql: GraphQLClient, variables: dict[str, Any]
) -> None:
    """Variables that do not fit the schema are the request's fault, explained to the user."""
    error = gql.error(SPECS_QUERY, **variables)
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert "Internal server error" not in error["message"]


def test_missing_required_variable_is_a_user_error(gql: GraphQLClient) -> None:
    error = gql.error("query($h: String!) { spec(hash: $h) { hash } }")
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert "$h" in error["message"] or "'h'" in error["message"] or " h " in error["message"]


def test_bad_hash_prefix_in_filter_is_a_user_error(gql: GraphQLClient) -> None:
    error = gql.error(SPECS_QUERY, filter={"hashPrefix": "22x1"}, first=1, after=None)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert_names_character(error["message"], "1")


def check_combined(
    gql: GraphQLClient, expected: Expected, tag: str | None, cases: list[oq.SpecCase]
) -> None:
    """Many filters per request (aliases); each result is compared in full, in order."""
    specs = list(expected[tag_of(tag)].values())
    assert len(specs) <= 100, "one page per filter"
    for start in range(0, len(cases), 40):
        chunk = cases[start : start + 40]
        variables = {f"f{i}": case.filter for i, case in enumerate(chunk)}
        header = ", ".join(f"$f{i}: SpecFilter" for i in range(len(chunk)))
        fields = " ".join(
            f"r{i}: specs(tag: $tag, filter: $f{i}, first: 100) {{ totalCount nodes {{ hash }} }}"
            for i in range(len(chunk))
        )
        data = gql.data(f"query($tag: String, {header}) {{ {fields} }}", tag=tag, **variables)
        for i, case in enumerate(chunk):
            want = oq.ordered(s for s in specs if case.holds(s))
            got = data[f"r{i}"]
            assert (got["totalCount"], [n["hash"] for n in got["nodes"]]) == (len(want), want), (
                case.id
            )


COMBINED_GROUP = """
  r{i}: specs(tag: $tag, filter: $f{i}, first: 100) {{ totalCount nodes {{ hash }} }}
  h{i}: packages(tag: $tag, filter: {{hasSpec: $f{i}}}, first: 100) {{ nodes {{ name }} }}
  s{i}: stacks(tag: $tag) {{ name specs(filter: $f{i}, first: 100) {{ nodes {{ hash }} }}
          packages(filter: {{hasSpec: $f{i}}}) {{ nodes {{ name }} }} }}
  p{i}: packages(tag: $tag, first: 10) {{ nodes {{ name
          specs(filter: $f{i}, first: 20) {{ nodes {{ hash }} }} }} }}"""


def check_combined_in_every_scope(
    gql: GraphQLClient, expected: Expected, tag: str | None, cases: list[oq.SpecCase]
) -> None:
    """Each filter at the top, in every stack and package, and nested in hasSpec."""
    specs = list(expected[tag_of(tag)].values())
    packages = oq.by_package(specs)
    stacks = oq.stack_names(specs)
    assert len(specs) <= 100 and len(packages) <= 10
    assert all(len(mine) <= 20 for mine in packages.values())
    for start in range(0, len(cases), 10):
        chunk = cases[start : start + 10]
        variables = {f"f{i}": case.filter for i, case in enumerate(chunk)}
        header = ", ".join(f"$f{i}: SpecFilter" for i in range(len(chunk)))
        fields = " ".join(COMBINED_GROUP.format(i=i) for i in range(len(chunk)))
        data = gql.data(f"query($tag: String, {header}) {{ {fields} }}", tag=tag, **variables)
        for i, case in enumerate(chunk):
            want = [s for s in specs if case.holds(s)]
            names = sorted({s["name"] for s in want})
            top = data[f"r{i}"]
            assert (top["totalCount"], [n["hash"] for n in top["nodes"]]) == (
                len(want),
                oq.ordered(want),
            ), case.id
            assert [n["name"] for n in data[f"h{i}"]["nodes"]] == names, case.id
            assert [s["name"] for s in data[f"s{i}"]] == stacks
            for stack in data[f"s{i}"]:
                mine = [s for s in want if stack["name"] in s["stacks"]]
                assert [n["hash"] for n in stack["specs"]["nodes"]] == oq.ordered(mine), (
                    case.id,
                    stack["name"],
                )
                # packages of the stack with a matching spec (in the stack or not)
                having = [
                    n for n in names if any(stack["name"] in s["stacks"] for s in packages[n])
                ]
                assert [n["name"] for n in stack["packages"]["nodes"]] == having, (
                    case.id,
                    stack["name"],
                )
            for package in data[f"p{i}"]["nodes"]:
                mine = [s for s in want if s["name"] == package["name"]]
                assert [n["hash"] for n in package["specs"]["nodes"]] == oq.ordered(mine), (
                    case.id,
                    package["name"],
                )


@pytest.mark.parametrize("tag", TAGS, ids=TAG_IDS)
def test_spec_filters_combined_in_every_scope(
    gql: GraphQLClient, expected: Expected, tag: str | None
) -> None:
    atoms = [oq.spec_case(i) for i in oq.SCOPE_ATOMIC_IDS]
    cases = [c for c in oq.combined(atoms) if "|or|" in c.id or "|and-not|" in c.id]
    check_combined_in_every_scope(gql, expected, tag, cases)


@pytest.mark.parametrize("tag", TAGS, ids=TAG_IDS)
def test_spec_filters_combined_pairwise(
    gql: GraphQLClient, expected: Expected, tag: str | None
) -> None:
    atoms = [oq.spec_case(i) for i in oq.ATOMIC_IDS]
    check_combined(gql, expected, tag, oq.combined(atoms))


# --- Query.packages -------------------------------------------------------------------------------


@pytest.mark.parametrize("tag", TAGS, ids=TAG_IDS)
@pytest.mark.parametrize("case", oq.PACKAGE_FILTERS, ids=lambda c: c.id)
def test_package_filter(
    gql: GraphQLClient, expected: Expected, tag: str | None, case: oq.PackageCase
) -> None:
    check_package_filter(gql, expected, tag, case)


@pytest.mark.parametrize("case", oq.SPEC_FILTERS, ids=lambda c: c.id)
def test_packages_has_spec_nests_every_spec_filter(
    gql: GraphQLClient, expected: Expected, case: oq.SpecCase
) -> None:
    want = sorted({s["name"] for s in matching(expected, None, case)})
    total, names = walk_packages(gql, 100, filter={"hasSpec": case.filter})
    assert (total, names) == (len(want), want)


# --- Stack.specs, Stack.packages, Package.specs with filters --------------------------------------


@pytest.mark.parametrize("case", oq.SPEC_FILTERS, ids=lambda c: c.id)
def test_stack_specs_and_package_specs_with_filter(
    gql: GraphQLClient, expected: Expected, case: oq.SpecCase
) -> None:
    want = matching(expected, None, case)
    data = gql.data(
        """query($f: SpecFilter) {
             stacks { name specs(filter: $f, first: 100) { totalCount nodes { hash } } }
             packages(first: 10) { nodes { name specs(filter: $f, first: 20) {
               totalCount nodes { hash } } } } }""",
        f=case.filter,
    )
    specs = list(expected["develop"].values())
    for stack in data["stacks"]:
        mine = [s for s in want if stack["name"] in s["stacks"]]
        assert stack["specs"]["totalCount"] == len(mine), stack["name"]
        assert [n["hash"] for n in stack["specs"]["nodes"]] == oq.ordered(mine), stack["name"]
    assert [s["name"] for s in data["stacks"]] == oq.stack_names(specs)
    for package in data["packages"]["nodes"]:
        mine = [s for s in want if s["name"] == package["name"]]
        assert package["specs"]["totalCount"] == len(mine), package["name"]
        assert [n["hash"] for n in package["specs"]["nodes"]] == oq.ordered(mine)


@pytest.mark.parametrize("case", oq.PACKAGE_FILTERS, ids=lambda c: c.id)
def test_stack_packages_with_filter(
    gql: GraphQLClient, expected: Expected, case: oq.PackageCase
) -> None:
    data = gql.data(
        """query($f: PackageFilter) {
             stacks { name packages(filter: $f, first: 100) { totalCount nodes { name } } } }""",
        f=case.filter,
    )
    packages = oq.by_package(expected["develop"].values())
    for stack in data["stacks"]:
        want = [
            name
            for name, specs in packages.items()
            if any(stack["name"] in s["stacks"] for s in specs) and case.holds(name, specs)
        ]
        got = stack["packages"]
        assert (got["totalCount"], [n["name"] for n in got["nodes"]]) == (len(want), want), stack


def test_stack_and_package_specs_paginate(gql: GraphQLClient, expected: Expected) -> None:
    specs = list(expected["develop"].values())
    for stack in ("root", "ml-linux-x86_64-cuda", "e4s"):
        want = oq.ordered(s for s in specs if stack in s["stacks"])
        total, nodes = walk(gql, STACK_SPECS_QUERY, ("stack", "specs"), 2, stack=stack, tag=None)
        assert (total, [n["hash"] for n in nodes]) == (len(want), want)
    for name in ("hdf5", "cudnn"):
        want = oq.ordered(s for s in specs if s["name"] == name)
        total, nodes = walk(gql, PACKAGE_SPECS_QUERY, ("package", "specs"), 5, name=name, tag=None)
        assert (total, [n["hash"] for n in nodes]) == (len(want), want)


def test_package_specs_on_another_tag(gql: GraphQLClient, expected: Expected) -> None:
    specs = [s for s in expected["v0.22.0"].values() if s["name"] == "zlib"]
    filter_ = {"variants": ["+shared"]}
    total, nodes = walk(
        gql,
        PACKAGE_SPECS_QUERY,
        ("package", "specs"),
        1,
        name="zlib",
        tag="v0.22.0",
        filter=filter_,
    )
    assert [n["hash"] for n in nodes] == oq.ordered(
        s for s in specs if oq.has_variants(s, "+shared")
    )
    assert total == 1


# --- pagination -----------------------------------------------------------------------------------


@pytest.mark.parametrize("page_size", [1, 3, 7, 100])
def test_specs_walk_every_page_size(gql: GraphQLClient, expected: Expected, page_size: int) -> None:
    specs = list(expected["develop"].values())
    total, hashes = walk_specs(gql, page_size)
    assert total == len(specs) == len(set(hashes))
    assert hashes == oq.ordered(specs)
    case = oq.spec_case("stack-prefix")
    total, hashes = walk_specs(gql, page_size, filter=case.filter)
    assert hashes == oq.ordered(matching(expected, None, case)) and total == len(hashes)


@pytest.mark.parametrize("page_size", [1, 3, 7, 100])
def test_packages_walk_every_page_size(
    gql: GraphQLClient, expected: Expected, page_size: int
) -> None:
    names = sorted({s["name"] for s in expected["develop"].values()})
    total, seen = walk_packages(gql, page_size)
    assert total == len(names) and seen == names
    case = next(c for c in oq.PACKAGE_FILTERS if c.id == "has-spec-platform")
    total, seen = walk_packages(gql, page_size, filter=case.filter)
    assert seen == matching_packages(expected, None, case) and total == len(seen)


def test_each_edge_cursor_resumes_right_after_its_node(
    gql: GraphQLClient, expected: Expected
) -> None:
    order = oq.ordered(expected["develop"].values())
    edges = gql.data(SPECS_QUERY, first=100, after=None)["specs"]["edges"]
    assert [e["node"]["hash"] for e in edges] == order
    assert len({e["cursor"] for e in edges}) == len(edges)
    for position, edge in enumerate(edges):
        page = gql.data(SPECS_QUERY, first=2, after=edge["cursor"])["specs"]
        assert [n["hash"] for n in page["nodes"]] == order[position + 1 : position + 3]
        assert page["pageInfo"]["hasPreviousPage"] is True
        assert page["pageInfo"]["hasNextPage"] == (position + 3 < len(order))
        # The same position reached through pages carries the same cursor.
        if page["edges"]:
            assert page["edges"][0]["cursor"] == edges[position + 1]["cursor"]


def test_package_edge_cursors_resume_after_their_node(
    gql: GraphQLClient, expected: Expected
) -> None:
    names = sorted({s["name"] for s in expected["develop"].values()})
    edges = gql.data(PACKAGES_QUERY, first=100, after=None)["packages"]["edges"]
    for position, edge in enumerate(edges):
        page = gql.data(PACKAGES_QUERY, first=100, after=edge["cursor"])["packages"]
        assert [n["name"] for n in page["nodes"]] == names[position + 1 :]


def test_cursors_are_stable(gql: GraphQLClient) -> None:
    variables = {"filter": {"platform": {"eq": "linux"}}, "first": 5, "after": None}
    assert gql.data(SPECS_QUERY, **variables) == gql.data(SPECS_QUERY, **variables)


def test_first_zero_returns_no_nodes_but_the_count(gql: GraphQLClient, expected: Expected) -> None:
    page = gql.data(SPECS_QUERY, first=0, after=None)["specs"]
    assert page["totalCount"] == len(expected["develop"])
    assert page["nodes"] == [] and page["edges"] == []
    assert page["pageInfo"]["hasNextPage"] is True
    assert page["pageInfo"]["startCursor"] is None and page["pageInfo"]["endCursor"] is None
    packages = gql.data(PACKAGES_QUERY, first=0, after=None)["packages"]
    assert packages["nodes"] == [] and packages["pageInfo"]["hasNextPage"] is True


def test_first_above_the_total_returns_everything(gql: GraphQLClient, expected: Expected) -> None:
    page = gql.data(SPECS_QUERY, first=1000, after=None)["specs"]
    assert len(page["nodes"]) == len(expected["develop"])
    assert page["pageInfo"]["hasNextPage"] is False


def test_default_first_is_20(gql: GraphQLClient, expected: Expected) -> None:
    page = gql.data("{ specs { totalCount nodes { hash } pageInfo { hasNextPage } } }")["specs"]
    assert page["nodes"] == [{"hash": h} for h in oq.ordered(expected["develop"].values())[:20]]
    assert page["pageInfo"]["hasNextPage"] is True


def test_first_above_the_cap_returns_a_capped_page(
    bulk: tuple[GraphQLClient, Expected],
) -> None:
    client, specs = bulk
    order = oq.ordered(specs["develop"].values())
    assert len(order) == BULK_SPECS
    for first in (101, 1000):
        page = client.data(SPECS_QUERY, first=first, after=None)["specs"]
        assert page["totalCount"] == BULK_SPECS
        assert [n["hash"] for n in page["nodes"]] == order[:100]
        assert page["pageInfo"]["hasNextPage"] is True
        rest = client.data(SPECS_QUERY, first=first, after=page["pageInfo"]["endCursor"])
        assert [n["hash"] for n in rest["specs"]["nodes"]] == order[100:]
        assert rest["specs"]["pageInfo"]["hasNextPage"] is False
    total, hashes = walk_specs(client, 100)
    assert (total, hashes) == (BULK_SPECS, order)
    page = client.data('{ stack(name: "root") { specs(first: 500) { nodes { hash } } } }')
    assert [n["hash"] for n in page["stack"]["specs"]["nodes"]] == order[:100]


def test_the_cap_is_configurable(pages_index: Path, expected: Expected) -> None:
    order = oq.ordered(expected["develop"].values())
    with serving(pages_index, max_first=5) as client:
        for first in (6, 100, None):
            variables = {} if first is None else {"first": first}
            page = client.data(
                "query($first: Int = 20) { specs(first: $first) { nodes { hash } "
                "pageInfo { hasNextPage } } }",
                **variables,
            )["specs"]
            assert [n["hash"] for n in page["nodes"]] == order[:5]
            assert page["pageInfo"]["hasNextPage"] is True
        assert walk_specs(client, 5) == (len(order), order)


def test_negative_first_is_a_user_error(gql: GraphQLClient) -> None:
    queries = [
        "{ specs(first: -1) { totalCount } }",
        "{ packages(first: -5) { totalCount } }",
        '{ stack(name: "root") { specs(first: -1) { totalCount } } }',
        '{ stack(name: "root") { packages(first: -1) { totalCount } } }',
        '{ package(name: "hdf5") { specs(first: -1) { totalCount } } }',
        # A search's rows are put in order unless the page is empty: a bad `first` still fails.
        '{ specs(search: "zlib", first: -1) { totalCount } }',
        '{ packages(search: "zlib", first: -1) { totalCount } }',
    ]
    for query in queries:
        error = gql.error(query)
        assert error["extensions"]["code"] == "BAD_USER_INPUT", query
        assert "first" in error["message"], query


@pytest.mark.parametrize(
    "cursor",
    ["nonsense", "", "!!!", "YWJj", base64.b64encode(b"\xff\xfe").decode(), "a" * 500],
)
def test_malformed_cursor_is_a_user_error(gql: GraphQLClient, cursor: str) -> None:
    for query, field in ((SPECS_QUERY, "specs"), (PACKAGES_QUERY, "packages")):
        body = gql(query, first=2, after=cursor)
        (error,) = body["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", (field, error)
        assert "Internal server error" not in error["message"]


def test_cursor_from_another_query_is_a_user_error(gql: GraphQLClient) -> None:
    linux = gql.data(SPECS_QUERY, first=2, after=None, filter={"platform": {"eq": "linux"}})
    cursor = linux["specs"]["pageInfo"]["endCursor"]
    packages = gql.data(PACKAGES_QUERY, first=2, after=None)["packages"]["pageInfo"]["endCursor"]
    stack = gql.data(STACK_SPECS_QUERY, stack="root", first=2, after=None, tag=None)
    stack_cursor = stack["stack"]["specs"]["pageInfo"]["endCursor"]
    hdf5 = gql.data(PACKAGE_SPECS_QUERY, name="hdf5", first=2, after=None, tag=None)
    hdf5_cursor = hdf5["package"]["specs"]["pageInfo"]["endCursor"]
    foreign = [
        (SPECS_QUERY, {"filter": {"platform": {"eq": "darwin"}}, "after": cursor}),
        (SPECS_QUERY, {"after": cursor}),
        (SPECS_QUERY, {"filter": {"platform": {"eq": "linux"}}, "tag": "v0.22.0", "after": cursor}),
        (SPECS_QUERY, {"filter": {"platform": {"eq": "linux"}}, "search": "mpi", "after": cursor}),
        (SPECS_QUERY, {"after": packages}),
        (PACKAGES_QUERY, {"after": cursor}),
        (SPECS_QUERY, {"after": stack_cursor}),
        (STACK_SPECS_QUERY, {"stack": "e4s", "after": stack_cursor}),
        (PACKAGE_SPECS_QUERY, {"name": "hdf5", "after": stack_cursor}),
        (PACKAGE_SPECS_QUERY, {"name": "cudnn", "after": hdf5_cursor}),
        (STACK_SPECS_QUERY, {"stack": "root", "after": hdf5_cursor}),
    ]
    for query, variables in foreign:
        error = gql.error(query, **{"first": 2, **variables})
        assert error["extensions"]["code"] == "BAD_USER_INPUT", variables
    # The owner query still accepts it.
    again = gql.data(SPECS_QUERY, first=2, after=cursor, filter={"platform": {"eq": "linux"}})
    assert again["specs"]["pageInfo"]["hasPreviousPage"] is True


def test_cursor_from_another_index_build_is_a_user_error(
    gql: GraphQLClient, bulk: tuple[GraphQLClient, Expected]
) -> None:
    client, _ = bulk
    cursor = client.data(SPECS_QUERY, first=2, after=None)["specs"]["pageInfo"]["endCursor"]
    error = gql.error(SPECS_QUERY, first=2, after=cursor)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"


def test_cursor_of_the_last_node_gives_an_empty_page(gql: GraphQLClient) -> None:
    everything = gql.data(SPECS_QUERY, first=100, after=None)["specs"]
    page = gql.data(SPECS_QUERY, first=5, after=everything["pageInfo"]["endCursor"])["specs"]
    assert page["nodes"] == [] and page["totalCount"] == everything["totalCount"]
    assert page["pageInfo"]["hasNextPage"] is False
    assert page["pageInfo"]["hasPreviousPage"] is True


# --- facets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("tag", TAGS, ids=TAG_IDS)
@pytest.mark.parametrize("case", oq.SPEC_FILTERS, ids=lambda c: c.id)
def test_facets_count_the_whole_result(
    gql: GraphQLClient, expected: Expected, tag: str | None, case: oq.SpecCase
) -> None:
    check_facets(gql, expected, tag, case)


def test_facets_normalize_compilers(gql: GraphQLClient, expected: Expected) -> None:
    data = gql.data(FACETS_QUERY, filter={"compiler": {"prefix": "gcc@11"}})["specs"]
    specs = expected["develop"].values()
    raw = {s["compiler"] for s in specs if s["compiler"].startswith("gcc@")}
    assert {"gcc@=11.4.0", "gcc@11.4.0"} <= raw  # both spellings are on the pages
    count = sum(oq.compiler(s) == "gcc@11.4.0" for s in specs)
    assert data["facets"]["compilers"] == [{"value": "gcc@11.4.0", "count": count}]


def test_facets_of_a_search_and_a_nested_connection(gql: GraphQLClient, expected: Expected) -> None:
    scatter = [s for s in expected["develop"].values() if s["name"] == "py-torch-scatter"]
    data = gql.data(FACETS_QUERY, search="scatter")["specs"]
    assert data["facets"] == oq.facets(scatter)
    stack = gql.data(
        """{ stack(name: "ml-linux-x86_64-cuda") { specs(first: 1) { totalCount
             facets { packages { value count } targets { value count } } } } }"""
    )["stack"]["specs"]
    mine = [s for s in expected["develop"].values() if "ml-linux-x86_64-cuda" in s["stacks"]]
    facets = oq.facets(mine)
    assert stack["facets"] == {"packages": facets["packages"], "targets": facets["targets"]}


# --- stacks ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("tag", TAGS, ids=TAG_IDS)
def test_stacks_are_ordered_with_aggregates(
    gql: GraphQLClient, expected: Expected, tag: str | None
) -> None:
    check_stacks(gql, expected, tag)


def test_stack_by_name(gql: GraphQLClient, expected: Expected) -> None:
    for tag, specs in expected.items():
        for name in [*oq.stack_names(specs.values()), "no-such-stack"]:
            data = gql.data(
                "query($n: String!, $t: String) { stack(name: $n, tag: $t) { "
                + STACK_FIELDS
                + " } }",
                n=name,
                t=tag,
            )
            if name == "no-such-stack":
                assert data == {"stack": None}
            else:
                assert data["stack"] == dict(oq.stack_summary(specs.values(), name), tag=tag)


def test_stack_counts_agree_with_its_connections(gql: GraphQLClient, expected: Expected) -> None:
    data = gql.data(
        """{ stacks { name numSpecs numPackages specs(first: 0) { totalCount }
             packages(first: 0) { totalCount } } }"""
    )
    specs = list(expected["develop"].values())
    for stack in data["stacks"]:
        summary = oq.stack_summary(specs, stack["name"])
        assert stack["specs"]["totalCount"] == stack["numSpecs"] == summary["numSpecs"]
        assert stack["packages"]["totalCount"] == stack["numPackages"] == summary["numPackages"]


def test_stack_of_another_tag_only(gql: GraphQLClient) -> None:
    data = gql.data(
        """{ here: stack(name: "windows-vis", tag: "v0.22.0") { numSpecs numPackages }
             default: stack(name: "windows-vis") { numSpecs }
             hep: stack(name: "hep") { numSpecs }
             oldhep: stack(name: "hep", tag: "v0.22.0") { name } }"""
    )
    assert data["here"] == {"numSpecs": 1, "numPackages": 1}
    assert data["default"] is None and data["oldhep"] is None
    assert data["hep"] == {"numSpecs": 1}


def test_num_specs_by_stack_for_every_package(gql: GraphQLClient, expected: Expected) -> None:
    for tag, specs in expected.items():
        data = gql.data(
            """query($t: String) { packages(tag: $t, first: 100) { nodes {
                 name numSpecs numSpecsByStack { stack count } } } }""",
            t=tag,
        )
        packages = oq.by_package(specs.values())
        assert [n["name"] for n in data["packages"]["nodes"]] == list(packages)
        for node in data["packages"]["nodes"]:
            mine = packages[node["name"]]
            assert node["numSpecs"] == len(mine)
            assert node["numSpecsByStack"] == oq.num_specs_by_stack(mine), node["name"]


# --- hash prefixes --------------------------------------------------------------------------------


@pytest.mark.parametrize("tag", ["develop", "v0.22.0"])
def test_every_spec_resolves_by_hash_and_prefix(
    gql: GraphQLClient, expected: Expected, tag: str
) -> None:
    check_hash_forms(gql, expected, tag)


def test_seven_characters_resolve_in_the_fixture(expected: Expected) -> None:
    hashes = sorted(expected["develop"])
    assert all(len(oq.shortest_unique_prefix(hashes, h)) == 7 for h in hashes)


def test_hash_resolution_is_within_the_tag(gql: GraphQLClient, expected: Expected) -> None:
    old = sorted(expected["v0.22.0"])[0]
    new = sorted(expected["develop"])[0]
    data = gql.data(
        """query($old: String!, $new: String!) { a: spec(hash: $old) { hash }
             b: spec(hash: $old, tag: "v0.22.0") { hash tag }
             c: spec(hash: $new, tag: "v0.22.0") { hash }
             d: spec(hash: $new, tag: "develop") { tag } }""",
        old=old[:7],
        new=new[:7],
    )
    assert data == {
        "a": None,
        "b": {"hash": old, "tag": "v0.22.0"},
        "c": None,
        "d": {"tag": "develop"},
    }


@pytest.mark.parametrize("prefix", ["22xi", "/22XI", "2", "22"])
def test_ambiguous_prefix_lists_candidates(
    gql: GraphQLClient, expected: Expected, prefix: str
) -> None:
    check_ambiguous(gql, list(expected["develop"].values()), prefix, None)


def test_every_ambiguous_prefix_of_each_tag(gql: GraphQLClient, expected: Expected) -> None:
    for tag, specs in expected.items():
        for prefix in oq.ambiguous_prefixes(specs):
            check_ambiguous(gql, list(specs.values()), prefix, tag)


def test_ambiguous_prefix_caps_candidates_at_ten(bulk: tuple[GraphQLClient, Expected]) -> None:
    client, specs = bulk
    check_ambiguous(client, list(specs["develop"].values()), BULK_SHARED_PREFIX, None)
    error = client.error(f'{{ spec(hash: "{BULK_SHARED_PREFIX}") {{ hash }} }}')
    assert error["extensions"]["count"] == BULK_SHARED_COUNT
    assert len(error["extensions"]["candidates"]) == 10
    total, hashes = walk_specs(client, 4, filter={"hashPrefix": BULK_SHARED_PREFIX.upper()})
    want = oq.ordered(s for s in specs["develop"].values() if s["hash"].startswith("qqqq"))
    assert (total, hashes) == (BULK_SHARED_COUNT, want)


@pytest.mark.parametrize("char", ["1", "8", "9", "0", "!", "-", "é", "İ", "\u212a"])
def test_non_base32_character_is_named(gql: GraphQLClient, char: str) -> None:
    """By its position in the text as sent (a letter may lower to two: "İ"; the Kelvin
    sign lowers to an ASCII "k")."""
    cases = ((f"22x{char}", 4), (f"/{char}", 2), (f"abc{char}def", 4), (f" /ab{char}", 5))
    for text, position in cases:
        error = gql.error("query($h: String!) { spec(hash: $h) { hash } }", h=text)
        assert error["extensions"]["code"] == "BAD_USER_INPUT", text
        assert_names_character(error["message"], char)
        assert f"(position {position} of " in error["message"]
        error = gql.error(SPECS_QUERY, filter={"hashPrefix": text}, first=1, after=None)
        assert error["extensions"]["code"] == "BAD_USER_INPUT", text
        assert_names_character(error["message"], char)
        assert f"(position {position} of " in error["message"]


def test_a_hash_of_32_characters_that_lower_to_more_is_refused_by_its_character(
    gql: GraphQLClient,
) -> None:
    error = gql.error("query($h: String!) { spec(hash: $h) { hash } }", h="İ" * 32)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "'İ' (position 1 of" in error["message"], error["message"]


@pytest.mark.parametrize("tag", ["develop", "v0.22.0"])
def test_unknown_prefix_is_null(gql: GraphQLClient, expected: Expected, tag: str) -> None:
    prefix = oq.unused_prefix(expected[tag])
    data = gql.data(
        "query($h: String!, $t: String) { spec(hash: $h, tag: $t) { hash } }", h=prefix, t=tag
    )
    assert data == {"spec": None}
    total, hashes = walk_specs(gql, tag=tag, filter={"hashPrefix": prefix})
    assert (total, hashes) == (0, [])


# --- full-text search -----------------------------------------------------------------------------


def search_specs(gql: GraphQLClient, text: str, **variables: Any) -> list[str]:
    total, hashes = walk_specs(gql, 100, search=text, **variables)
    assert total == len(hashes) == len(set(hashes))
    return hashes


def search_packages(gql: GraphQLClient, text: str, **variables: Any) -> list[str]:
    total, names = walk_packages(gql, 100, search=text, **variables)
    assert total == len(names) == len(set(names))
    return names


def hashes_of(expected: Expected, holds: oq.SpecPredicate, tag: str = "develop") -> set[str]:
    return {h for h, s in expected[tag].items() if holds(s)}


@pytest.mark.parametrize(
    "text",
    [
        "torch scatter",
        "scatter",
        "torch",
        "py torch scatter",
        "Scatter",
        "scater",
        "scatterr",
        "scattor",
        "torch scater",
        "SCATTER torch",
    ],
)
def test_search_package_name_parts_and_one_typo(
    gql: GraphQLClient, expected: Expected, text: str
) -> None:
    assert search_packages(gql, text) == ["py-torch-scatter"]
    assert set(search_specs(gql, text)) == hashes_of(
        expected, lambda s: s["name"] == "py-torch-scatter"
    )


@pytest.mark.parametrize("text", ["zlip", "zlbi", "hdf4", "scatterrrr", "sctr", "qqqqqqqq"])
def test_search_without_a_match(gql: GraphQLClient, text: str) -> None:
    """Short words get no typo, long words only one; no match is an empty result."""
    page = gql.data(SPECS_QUERY, search=text, first=5, after=None)["specs"]
    assert page["totalCount"] == 0 and page["nodes"] == []
    assert page["pageInfo"]["hasNextPage"] is False
    assert gql.data(PACKAGES_QUERY, search=text, first=5, after=None)["packages"]["totalCount"] == 0


def test_search_variant_terms(gql: GraphQLClient, expected: Expected) -> None:
    specs = expected["develop"]
    cuda = {h for h, s in specs.items() if oq.has_variants(s, "+cuda")}
    arch80 = {h for h, s in specs.items() if "cuda_arch=80" in oracle.spec_atoms(s)}
    assert cuda and arch80
    assert set(search_specs(gql, "+cuda")) == cuda
    assert set(search_specs(gql, "cuda_arch=80")) == arch80
    assert set(search_specs(gql, "cuda_arch=90")) == set()
    assert search_packages(gql, "+cuda") == ["hdf5"]
    assert search_packages(gql, "cuda_arch=80") == ["hdf5"]
    plus_mpi = {h for h, s in specs.items() if oq.has_variants(s, "+mpi")}
    any_mpi = {h for h, s in specs.items() if any(v[1:] == "mpi" for v in s["variants"])}
    assert set(search_specs(gql, "+mpi")) == plus_mpi
    assert plus_mpi <= set(search_specs(gql, "mpi")) <= any_mpi
    assert search_packages(gql, "mpi") == ["hdf5"]
    assert set(search_specs(gql, "~shared +mpi")) == {
        h for h, s in specs.items() if oq.has_variants(s, "+mpi", "~shared")
    }


def test_search_hash_prefix_terms(gql: GraphQLClient, expected: Expected) -> None:
    specs = expected["develop"]
    full = "qm4i2hz4uep3enthjxjqi5ogz7kok3zv"
    assert search_specs(gql, full[:5]) == [full]
    assert search_specs(gql, full[:5].upper()) == [full]
    assert search_specs(gql, full) == [full]
    assert search_specs(gql, "/" + full[:3]) == [full]
    assert set(search_specs(gql, "/22xi")) == {h for h in specs if h.startswith("22xi")}
    assert set(search_specs(gql, "/2")) == {h for h in specs if h.startswith("2")}
    assert search_specs(gql, "22xi") == []  # a word shorter than 5 is not a hash prefix
    assert search_packages(gql, "/22xi") == sorted(
        {specs[h]["name"] for h in specs if h.startswith("22xi")}
    )
    assert search_packages(gql, full[:6]) == ["hdf5"]
    assert search_specs(gql, "hdf5 /22xi") == ["22xi2rdl3erbfqfoeqh5av2ricphkqdl"]


@pytest.mark.parametrize("text", ["/xyz1", "/22x8", "/!", "hdf5 /abc0"])
def test_search_with_a_bad_hash_term_is_a_user_error(gql: GraphQLClient, text: str) -> None:
    for query in (SPECS_QUERY, PACKAGES_QUERY):
        error = gql.error(query, search=text, first=1, after=None)
        assert error["extensions"]["code"] == "BAD_USER_INPUT", text
        assert_names_character(error["message"], text.rstrip()[-1])


def test_search_combined_with_filters(gql: GraphQLClient, expected: Expected) -> None:
    darwin = hashes_of(
        expected, lambda s: s["name"] == "py-torch-scatter" and s["platform"] == "darwin"
    )
    assert set(search_specs(gql, "scatter", filter={"platform": {"eq": "darwin"}})) == darwin
    assert search_specs(gql, "scatter", filter={"package": {"eq": "hdf5"}}) == []
    got = search_specs(gql, "+mpi", filter={"compiler": {"prefix": "gcc@11"}})
    assert set(got) == hashes_of(
        expected, lambda s: oq.has_variants(s, "+mpi") and oq.compiler(s) == "gcc@11.4.0"
    )
    assert search_packages(gql, "mpi", filter={"hasSpec": {"platform": {"eq": "darwin"}}}) == [
        "hdf5"
    ]
    assert search_packages(gql, "scatter", filter={"stack": {"eq": "hep"}}) == []
    stack = gql.data(
        """{ stack(name: "ml-linux-x86_64-cuda") {
             specs(search: "scatter") { totalCount }
             packages(search: "+cuda") { nodes { name } } } }"""
    )["stack"]
    scatter_cuda = hashes_of(
        expected,
        lambda s: s["name"] == "py-torch-scatter" and "ml-linux-x86_64-cuda" in s["stacks"],
    )
    assert stack["specs"]["totalCount"] == len(scatter_cuda)
    assert stack["packages"]["nodes"] == [{"name": "hdf5"}]
    package = gql.data('{ package(name: "hdf5") { specs(search: "+rocm") { nodes { hash } } } }')
    assert package["package"]["specs"]["nodes"] == [
        {"hash": h}
        for h in hashes_of(expected, lambda s: s["name"] == "hdf5" and oq.has_variants(s, "+rocm"))
    ]


def test_search_ranks_the_exact_package_name_first(gql: GraphQLClient, expected: Expected) -> None:
    assert search_packages(gql, "zlib")[0] == "zlib"
    assert search_packages(gql, "zlib", tag="v0.22.0")[0] == "zlib"
    zlib = hashes_of(expected, lambda s: s["name"] == "zlib")
    ranked = search_specs(gql, "zlib")
    assert set(ranked[: len(zlib)]) == zlib
    assert search_packages(gql, "cmake", tag="v0.22.0")[0] == "cmake"


def test_search_and_pagination(gql: GraphQLClient, expected: Expected) -> None:
    whole = search_specs(gql, "scatter")
    for size in (1, 4):
        total, hashes = walk_specs(gql, size, search="scatter")
        assert (total, hashes) == (len(whole), whole)


def test_search_minus_variant_means_false(gql: GraphQLClient, expected: Expected) -> None:
    """`-x` is Spack's other spelling of `~x` (x=false), in search as in filters."""
    specs = expected["develop"]
    for name in ("mpi", "shared"):
        off = {h for h, s in specs.items() if f"{name}=false" in oracle.spec_atoms(s)}
        assert off
        assert set(search_specs(gql, f"~{name}")) == off
        assert set(walk_specs(gql, 100, filter={"variants": [f"-{name}"]})[1]) == off
        assert set(search_specs(gql, f"-{name}")) == off, f"search '-{name}'"


@pytest.mark.parametrize(
    ("text", "word"), [("scatetr", "scatter"), ("sactter", "scatter"), ("torhc", "torch")]
)
def test_search_tolerates_two_swapped_letters_as_one_typo(
    gql: GraphQLClient, text: str, word: str
) -> None:
    """A swapped pair of adjacent letters is one typo (as in Lucene's default fuzzy matching)."""
    assert search_packages(gql, word) == ["py-torch-scatter"]
    assert search_packages(gql, text) == ["py-torch-scatter"], text


# --- tags -----------------------------------------------------------------------------------------


def test_tag_argument_defaults_to_develop_everywhere(
    gql: GraphQLClient, expected: Expected
) -> None:
    specs = expected["develop"]
    data = gql.data(
        """{ specs(first: 100) { totalCount nodes { tag } }
             packages(first: 100) { nodes { name tag } }
             stacks { name tag }
             stack(name: "root") { tag numSpecs }
             package(name: "zlib") { tag numSpecs } }"""
    )
    assert data["specs"]["totalCount"] == len(specs)
    assert {n["tag"] for n in data["specs"]["nodes"]} == {"develop"}
    assert {n["tag"] for n in data["packages"]["nodes"]} == {"develop"}
    assert [s["name"] for s in data["stacks"]] == oq.stack_names(specs.values())
    assert {s["tag"] for s in data["stacks"]} == {"develop"}
    assert data["stack"] == {"tag": "develop", "numSpecs": len(specs)}
    assert data["package"] == {"tag": "develop", "numSpecs": 3}
    hash_ = sorted(specs)[0]
    assert gql.data(f'{{ spec(hash: "{hash_}") {{ tag }} }}') == {"spec": {"tag": "develop"}}


def test_other_tags_work(gql: GraphQLClient, expected: Expected) -> None:
    old = expected["v0.22.0"]
    data = gql.data(
        """{ specs(tag: "v0.22.0", first: 100) { totalCount nodes { hash name tag } }
             packages(tag: "v0.22.0") { nodes { name } } }"""
    )
    assert data["packages"]["nodes"] == [{"name": "cmake"}, {"name": "zlib"}]
    assert [n["hash"] for n in data["specs"]["nodes"]] == oq.ordered(old.values())
    assert {n["tag"] for n in data["specs"]["nodes"]} == {"v0.22.0"}
    nested = gql.data(
        """{ specs(tag: "v0.22.0", filter: {package: {eq: "zlib"}}) { nodes {
               package { tag numSpecs specs { totalCount } } } }
             stack(name: "e4s", tag: "v0.22.0") { tag specs { nodes { hash tag } }
               packages { nodes { name tag } } } }"""
    )
    zlib = [s for s in old.values() if s["name"] == "zlib"]
    package = {"tag": "v0.22.0", "numSpecs": len(zlib), "specs": {"totalCount": len(zlib)}}
    assert nested["specs"]["nodes"] == [{"package": package}] * len(zlib)
    e4s = [s for s in old.values() if "e4s" in s["stacks"]]
    assert nested["stack"] == {
        "tag": "v0.22.0",
        "specs": {"nodes": [{"hash": h, "tag": "v0.22.0"} for h in oq.ordered(e4s)]},
        "packages": {"nodes": [{"name": n, "tag": "v0.22.0"} for n in oq.by_package(e4s)]},
    }
    hit = sorted(old)[0]
    assert walk_specs(gql, 100, search=hit[:6]) == (0, [])
    assert walk_specs(gql, 100, search=hit[:6], tag="v0.22.0") == (1, [hit])


def test_unknown_tag_is_a_user_error_everywhere(gql: GraphQLClient) -> None:
    for query in (
        '{ specs(tag: "v9") { totalCount } }',
        '{ packages(tag: "v9") { totalCount } }',
        '{ stacks(tag: "v9") { name } }',
        '{ stack(name: "root", tag: "v9") { name } }',
        '{ spec(hash: "22xi", tag: "v9") { hash } }',
    ):
        error = gql.error(query)
        assert error["extensions"]["code"] == "BAD_USER_INPUT", query
        assert "v9" in error["message"], query


# --- cost limits ----------------------------------------------------------------------------------


def test_deeply_nested_connections_are_too_complex(gql: GraphQLClient) -> None:
    body = gql(
        """{ packages(first: 100) { nodes { specs(first: 100) { nodes { package {
             specs(first: 100) { nodes { hash } } } } } } } }"""
    )
    assert body.get("data") is None
    (error,) = body["errors"]
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert error["message"]


def test_nesting_through_fragments_and_variables_is_too_complex(gql: GraphQLClient) -> None:
    body = gql(
        """query($n: Int) { packages(first: $n) { ...P } }
           fragment P on PackageConnection { nodes { specs(first: $n) { nodes { ...S } } } }
           fragment S on Spec { package { specs(first: $n) { nodes { hash } } } }""",
        n=100,
    )
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    # Shallow but wide: ten aliases of 100 x 100 specs with 10 fields each, over 1M values.
    wide = " ".join(
        f"""a{i}: packages(first: 100) {{ nodes {{ specs(first: 100) {{ nodes {{
              hash shortHash name tag version os platform target stacks size }} }} }} }}"""
        for i in range(10)
    )
    error = gql.error(f"{{ {wide} }}")
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"


def test_too_deep_query_is_too_complex(gql: GraphQLClient) -> None:
    inner = "name"
    for _ in range(7):
        inner = f"specs(first: 1) {{ nodes {{ package {{ {inner} }} }} }}"
    error = gql.error(f'{{ package(name: "hdf5") {{ {inner} }} }}')
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"


def test_many_small_pages_are_not_too_complex(gql: GraphQLClient) -> None:
    data = gql.data(
        """{ packages(first: 10) { nodes { specs(first: 10) { nodes { package { name } } } } } }"""
    )
    assert len(data["packages"]["nodes"]) == 4


def test_a_cursor_with_a_negative_offset_is_malformed_not_foreign(gql: GraphQLClient) -> None:
    """The query's own cursor, its offset made negative: no cursor the API gives holds one."""
    cursor = gql.data(SPECS_QUERY, first=2, after=None)["specs"]["pageInfo"]["endCursor"]
    text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    owner = text.partition(":")[0]
    negative = base64.urlsafe_b64encode(f"{owner}:-5".encode()).decode().rstrip("=")
    error = gql(SPECS_QUERY, first=2, after=negative)["errors"][0]
    assert error["message"].startswith("malformed cursor"), error
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
