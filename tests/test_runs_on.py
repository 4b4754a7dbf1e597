"""What runs on my machine (`runsOn`, target ranges in `query:`), and which of these
hashes exist (`hash` with `missing`): over HTTP against a real index of a small build
cache whose binaries differ in target (`tests.question_data`), with the compiled and
the stock execution compared on every query (`serving`)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import graphql
import pytest

from cachegql.index import (
    IndexStore,
    build_index,
    host_target,
    runs_on,
    size_bounds,
    target_names,
)
from cachegql.schema import Context, build_schema
from cachegql.schema.limits import price
from tests import question_data as qd
from tests.conftest import CLI, GraphQLClient, serving

TARGETS_OF = "query($f: SpecFilter, $q: String) { specs(filter: $f, query: $q, first: 100) { nodes { target } facets { targets { value count } } } }"  # noqa: E501


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("questions")
    build_index([qd.write_cache(root / "mirror")], root / "ix", tag="develop")
    return root / "ix"


@pytest.fixture(scope="module")
def client(index: Path) -> Iterator[GraphQLClient]:
    with serving(index) as served:
        yield served


def _targets(client: GraphQLClient, **variables: object) -> list[str]:
    data = client.data(TARGETS_OF, **variables)["specs"]
    facets = {b["value"]: b["count"] for b in data["facets"]["targets"]}
    nodes = sorted(n["target"] for n in data["nodes"])
    assert sorted(t for t, n in facets.items() for _ in range(n)) == nodes
    return nodes


def test_runs_on_follows_archspecs_dag() -> None:
    # Ancestors in archspec's DAG: haswell is an Intel line of its own, not zen2's.
    assert runs_on("zen2") == ("x86_64", "x86_64_v2", "x86_64_v3", "zen", "zen2")
    assert "haswell" not in runs_on("zen3") and "zen2" in runs_on("zen3")
    assert runs_on("neoverse_v2")[0] == "aarch64"


def test_runs_on_keeps_the_target_and_its_ancestors(client: GraphQLClient) -> None:
    found = _targets(client, f={"package": {"eq": "hdf5"}, "runsOn": "zen2"})
    assert sorted(set(found)) == ["x86_64", "x86_64_v2", "x86_64_v3", "zen", "zen2"]
    assert found.count("zen2") == 3  # the three zen2 builds


def test_runs_on_combines_with_other_filters_facets_and_packages(client: GraphQLClient) -> None:
    both = {"runsOn": "zen2", "target": {"ne": "zen2"}, "package": {"eq": "hdf5"}}
    assert _targets(client, f=both) == ["x86_64", "x86_64_v2", "x86_64_v3", "zen"]
    assert _targets(client, f={"not": {"runsOn": "x86_64_v3"}, "package": {"eq": "hdf5"}}) == [
        "aarch64", "haswell", "zen", "zen2", "zen2", "zen2", "zen3",
    ]  # fmt: skip
    data = client.data(
        '{ packages(filter: {hasSpec: {runsOn: "aarch64"}}) { nodes { name '
        'specs(filter: {runsOn: "aarch64"}) { totalCount } } } }'
    )
    assert data["packages"]["nodes"] == [{"name": "hdf5", "specs": {"totalCount": 1}}]
    stacks = client.data('{ stacks { name specs(filter: {runsOn: "zen3"}) { totalCount } } }')
    assert sum(s["specs"]["totalCount"] for s in stacks["stacks"]) == 3 + 8  # deps, hdf5


def test_an_unknown_microarchitecture_names_close_matches(client: GraphQLClient) -> None:
    error = client.error(TARGETS_OF, f={"runsOn": "zen7"})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "unknown microarchitecture 'zen7'; did you mean" in error["message"]
    assert "zen" in error["message"].split("did you mean")[1]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "x86_64_v2:",
            ["haswell", "x86_64_v2", "x86_64_v3", "zen", "zen2", "zen2", "zen2", "zen3"],
        ),
        (":haswell", ["haswell", "x86_64", "x86_64_v2", "x86_64_v3"]),
        ("x86_64_v3:zen2", ["x86_64_v3", "zen", "zen2", "zen2", "zen2"]),
        ("zen3,aarch64:", ["aarch64", "zen3"]),
        ("zen", ["zen"]),
    ],
)
def test_target_ranges_in_query_have_spacks_meaning(
    client: GraphQLClient, target: str, expected: list[str]
) -> None:
    assert _targets(client, q=f"hdf5 target={target}") == expected


def test_target_names_of_ranges_and_lists() -> None:
    assert "zen4" in target_names("zen2:") and "zen" not in target_names("zen2:")
    assert target_names(":x86_64_v2") == ("x86_64", "x86_64_v2")
    assert target_names("a64fx,zen") == ("a64fx", "zen")  # single names stay as given


def test_a_range_over_an_unknown_target_is_refused_where_it_is(client: GraphQLClient) -> None:
    error = client.error(TARGETS_OF, q="hdf5 target=skylake_x:")
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "unknown microarchitecture 'skylake_x'" in error["message"]
    assert error["extensions"]["column"] == 6  # where `skylake_x:` starts
    assert error["message"].endswith("(in the query: hdf5 target=skylake_x:)")


def test_microarchitectures_lists_archspecs_targets(client: GraphQLClient) -> None:
    data = client.data('{ microarchitectures(family: "x86_64") { name vendor ancestors } }')
    by_name = {m["name"]: m for m in data["microarchitectures"]}
    assert data["microarchitectures"][0]["vendor"] == "generic"
    assert by_name["zen2"]["ancestors"][0] == "zen"
    assert "aarch64" not in by_name
    every = client.data("{ microarchitectures { name } }")["microarchitectures"]
    assert {"aarch64", "zen2", "power9le"} <= {m["name"] for m in every}


HASHES = (
    "query($f: SpecFilter) { specs(filter: $f, first: 100) { totalCount missing nodes { hash } } }"
)


def test_a_batch_of_full_hashes_reports_the_missing(client: GraphQLClient) -> None:
    present = sorted(qd.cache_nodes())[:5]
    absent = [qd.digest("absent-1"), qd.digest("absent-2")]
    asked = [absent[0], *present, absent[1], present[0]]
    data = client.data(HASHES, f={"hash": {"in": asked}})["specs"]
    assert data["totalCount"] == 5
    assert sorted(n["hash"] for n in data["nodes"]) == present
    assert data["missing"] == absent  # in the order asked, once each
    one = client.data(HASHES, f={"hash": {"eq": "/" + present[1].upper()}})["specs"]
    assert one["totalCount"] == 1 and one["missing"] == []
    assert client.data(HASHES, f={"package": {"eq": "zlib"}})["specs"]["missing"] == []


def test_a_hash_filtered_out_by_another_condition_is_missing(client: GraphQLClient) -> None:
    by_target = {n["arch"]["target"]: h for h, n in qd.cache_nodes().items() if n["name"] == "hdf5"}
    asked = [by_target["zen3"], by_target["zen"]]
    data = client.data(HASHES, f={"hash": {"in": asked}, "runsOn": "zen2"})["specs"]
    assert [n["hash"] for n in data["nodes"]] == [by_target["zen"]]
    assert data["missing"] == [by_target["zen3"]]


@pytest.mark.parametrize(
    ("hash_filter", "needle"),
    [
        ({"in": ["abc"]}, "not a full hash"),
        ({"eq": "0" * 32}, "not a full hash"),
        ({"prefix": "abc"}, "use hashPrefix"),
    ],
)
def test_bad_hashes_are_refused(
    client: GraphQLClient, hash_filter: dict[str, object], needle: str
) -> None:
    error = client.error(HASHES, f={"hash": hash_filter})
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert needle in error["message"]


def test_a_spec_lookup_miss_is_null(client: GraphQLClient) -> None:
    query = '{ spec(hash: "HASH") { hash } }'.replace("HASH", qd.digest("absent"))
    assert client.data(query)["spec"] is None


def test_a_batch_is_priced_by_its_hashes(index: Path) -> None:
    schema = build_schema()._schema
    operation = graphql.parse(HASHES).definitions[0]
    assert isinstance(operation, graphql.OperationDefinitionNode)
    store = IndexStore(index)
    try:

        def cost(n: int) -> int:
            hashes = [qd.digest(str(i)) for i in range(n)]
            return price(
                schema, operation, {}, {"f": {"hash": {"in": hashes}}}, size_bounds(store)
            ).cost

        assert cost(300) - cost(0) == 300 * 5
        assert cost(300) < 1_000_000 < cost(200_000)
    finally:
        store.close()


def _query_cli(index: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "query", "hdf5", "--index", str(index), "--json", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_cli_runs_on_a_target_or_this_host(index: Path) -> None:
    result = _query_cli(index, "--runs-on", "zen2")
    assert result.returncode == 0, result.stderr
    found = {s["target"] for s in json.loads(result.stdout)["specs"]}
    assert found == {"x86_64", "x86_64_v2", "x86_64_v3", "zen", "zen2"}
    host = _query_cli(index, "--runs-on", "host")
    assert host.returncode == 0, host.stderr
    on_host = {s["target"] for s in json.loads(host.stdout)["specs"]}
    assert on_host == set(runs_on(host_target())) & set(qd.TARGETS)


def test_the_cli_names_an_unknown_target(index: Path) -> None:
    result = _query_cli(index, "--runs-on", "zen7")
    assert result.returncode == 1
    assert result.stderr.startswith("error: unknown microarchitecture 'zen7'; did you mean")
    assert "Traceback" not in result.stderr


def test_plans_answer_runs_on_and_batches(index: Path) -> None:
    schema, store = build_schema(), IndexStore(index)
    try:
        query = (
            "query($f: SpecFilter) { specs(filter: $f) { totalCount missing "
            "facets { targets { value } } } microarchitectures { name ancestors } }"
        )
        variables = {"f": {"runsOn": "zen2", "hash": {"in": [qd.digest("x")]}}}
        answer = schema.answer_sync(query, variables, Context(store, 100))
        assert answer.execution == "compiled"
    finally:
        store.close()
