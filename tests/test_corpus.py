"""The real pages of ../shared: corpus/ (cache.spack.io) and seeds/ (loose .txt pages).

Skips with a message where ../shared is absent; fails instead when CI=true.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cachegql.index import BuildReport, IndexStore, find_specs, format_spec
from tests import oracle
from tests.conftest import GraphQLClient

pytestmark = pytest.mark.corpus
Expected = dict[str, dict[str, dict[str, Any]]]


def test_the_legacy_page_is_the_only_problem(corpus_build: BuildReport) -> None:
    assert [p.message for p in corpus_build.problems] == [
        "unsupported legacy format (spec_names without spec_details, as written before 2023); "
        "the page was skipped"
    ]
    assert "py-black" in corpus_build.problems[0].path


def test_every_page_loads(corpus_sources: list[Path], corpus_build: BuildReport) -> None:
    cache, seeds = corpus_sources
    pages = list(cache.rglob("specs.md")) + list(seeds.glob("*.txt"))
    assert len(pages) == 68  # 66 corpus pages (one legacy) and 2 seeds
    assert corpus_build.pages == 67  # all but the legacy one


def test_tag_counts_match_the_pages(corpus_gql: GraphQLClient, corpus_expected: Expected) -> None:
    tags = corpus_gql.data("{ tags { name numPackages numSpecs } }")["tags"]
    assert tags == [
        {
            "name": tag,
            "numPackages": len({s["name"] for s in specs.values()}),
            "numSpecs": len(specs),
        }
        for tag, specs in sorted(corpus_expected.items())
    ]
    assert {t["name"] for t in tags} == {"develop", "develop-2025-03-30", "v0.22.0"}


def test_seed_hash_prefix_resolves(corpus_gql: GraphQLClient) -> None:
    data = corpus_gql.data(
        '{ spec(hash: "/22XI27U") { name hash version compiler { name version } } }'
    )
    assert data["spec"]["name"] == "py-torch-scatter"
    assert data["spec"]["hash"] == "22xi27urdwtvpyoa6tufkwn4rzdkfyeq"


def test_every_package_summary_matches_its_pages(
    corpus_gql: GraphQLClient, corpus_expected: Expected
) -> None:
    for tag, specs in corpus_expected.items():
        by_package: dict[str, list[dict[str, Any]]] = {}
        for spec in specs.values():
            by_package.setdefault(spec["name"], []).append(spec)
        page = corpus_gql.data(
            """query($tag: String) { packages(tag: $tag, first: 100) { totalCount nodes {
                 name numSpecs compilers oss platforms targets stacks } } }""",
            tag=tag,
        )["packages"]
        assert page["totalCount"] == len(by_package)
        for node in page["nodes"]:
            mine = by_package[node["name"]]
            assert node == {
                "name": node["name"],
                "numSpecs": len(mine),
                "compilers": sorted({oracle.compiler_normalized(s["compiler"]) for s in mine}),
                "oss": sorted({s["os"] for s in mine}),
                "platforms": sorted({s["platform"] for s in mine}),
                "targets": sorted({s["target"] for s in mine}),
                "stacks": sorted({st for s in mine for st in s["stacks"]}),
            }


def test_every_corpus_spec_is_found_by_its_format(corpus_build: BuildReport) -> None:
    """Spack spec syntax on real pages: each spec's `format` finds it (engine of query:)."""
    store = IndexStore(corpus_build.out)
    for tag in store.tags:
        snapshot = store.snapshot(tag)
        rows = list(range(snapshot.num_specs))
        for row, spec in zip(rows, snapshot.specs(rows), strict=True):
            assert row in find_specs(snapshot, query=format_spec(spec)).tolist(), spec.hash
    store.close()


@pytest.mark.parametrize(
    ("query", "tag", "predicate"),
    [
        (
            "py-torch-scatter@2.1.2 target=aarch64 %gcc@13",
            "develop",
            lambda s: (
                s["name"] == "py-torch-scatter"
                and s["target"] == "aarch64"
                and oracle.compiler_normalized(s["compiler"]).startswith("gcc@13.")
            ),
        ),
        (
            "cudnn@8.9.7.29-12 os=ubuntu24.04",
            "develop",
            lambda s: (
                s["name"] == "cudnn"
                and s["versions"][0] == "8.9.7.29-12"
                and s["os"] == "ubuntu24.04"
            ),
        ),
        (
            "cudnn@:8.9.7.29-11",
            "develop",
            lambda s: s["name"] == "cudnn" and s["versions"][0] in {"8.9.5.30-12", "8.9.7.29-11"},
        ),
        (
            "hdf5 +mpi",
            "develop-2025-03-30",
            lambda s: s["name"] == "hdf5" and "+mpi" in s["variants"],
        ),
        (
            "gcc languages=c,c++",
            "develop",
            lambda s: (
                s["name"] == "gcc"
                and any(v.startswith("languages") and "c++" in v for v in s["variants"])
            ),
        ),
        (
            "%none platform=linux",
            "develop",
            lambda s: s["compiler"] == "none" and s["platform"] == "linux",
        ),
        ("/22xi27u", "develop", lambda s: s["hash"].startswith("22xi27u")),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_spec_queries_on_real_pages(
    corpus_gql: GraphQLClient, corpus_expected: Expected, query: str, tag: str, predicate: Any
) -> None:
    data = corpus_gql.data(
        "query($q: String!, $t: String) { specs(query: $q, tag: $t, first: 100) "
        "{ totalCount nodes { hash } } }",
        q=query,
        t=tag,
    )["specs"]
    expected = oracle.default_order(s for s in corpus_expected[tag].values() if predicate(s))
    assert expected, "the query should match something on the real pages"
    assert data["totalCount"] == len(expected)
    assert [n["hash"] for n in data["nodes"]] == expected[:100]
