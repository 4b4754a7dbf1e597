"""Spack's own build-cache test data (../shared/mirrors), indexed every way a user can
give it, and every spec checked against `tests.mirror_oracle` (an independent reading).

Each file is indexed as an index file, inside a v2 mirror root, the DB 8 index as a v3
mirror built here (with views and tarball sizes), the spec-file mirrors as they are,
and all of it again over HTTP from a real server on 127.0.0.1.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cachegql.index import build_index
from cachegql.server.fetch import HttpReader
from tests import mirror_builder as mb
from tests import mirror_oracle as mo
from tests.conftest import GraphQLClient, serving, shared_or_skip
from tests.http_fixture import MirrorHTTPServer

pytestmark = pytest.mark.corpus

SPEC_FIELDS = """hash name version namespace os platform target sizeBytes stacks format
    compiler { name version raw } variants { raw }
    dependencies { name hash version deptypes virtuals spec { hash } }"""
DB8 = "spack-test-v2_layout-unsigned-db-v8"


@pytest.fixture(scope="module")
def mirrors() -> Path:
    return shared_or_skip() / "mirrors"


def _index_files(mirrors: Path) -> list[Path]:
    return sorted(mirrors.rglob("index.json"), key=str)


def _real_index_files(mirrors: Path) -> list[Path]:
    """The database indexes (the signed mirror's `_pgp/index.json` is a key index)."""
    return [p for p in _index_files(mirrors) if "_pgp" not in p.parts]


def check_specs(gql: GraphQLClient, tag: str, expected: dict[str, mo.ExpectedSpec]) -> None:
    """Every expected spec answers with exactly the oracle's fields, and nothing else is there."""
    listed = gql.data(
        "query($t: String) { specs(tag: $t, first: 100) { totalCount nodes { hash } } }", t=tag
    )["specs"]
    assert listed["totalCount"] == len(expected)
    assert [n["hash"] for n in listed["nodes"]] == list(expected)  # the default order
    for digest, want in expected.items():
        got = gql.data(
            f"query($h: String!, $t: String) {{ spec(hash: $h, tag: $t) {{ {SPEC_FIELDS} }} }}",
            h=digest,
            t=tag,
        )["spec"]
        assert got is not None, digest
        _compare(got, want)
        # Its format, pasted into `query:`, finds it.
        found = gql.data(
            "query($q: String!, $t: String) { specs(query: $q, tag: $t) { nodes { hash } } }",
            q=got["format"],
            t=tag,
        )["specs"]["nodes"]
        assert found == [{"hash": digest}], got["format"]


def _compare(got: dict[str, Any], want: mo.ExpectedSpec) -> None:
    where = f"{want.name}/{want.hash[:7]}"
    assert (got["name"], got["version"], got["namespace"]) == (
        want.name,
        want.version,
        want.namespace or None,
    ), where
    assert (got["os"], got["platform"], got["target"]) == (want.os, want.platform, want.target)
    compiler = want.compiler
    assert got["compiler"] == {
        "name": compiler.name,
        "version": compiler.version,
        "raw": compiler.raw,
    }, where
    assert [v["raw"] for v in got["variants"]] == want.variants, where
    assert got["stacks"] == want.stacks, where
    assert got["sizeBytes"] == (None if want.size is None else float(want.size)), where
    for kind, flags in want.flags.items():
        assert f'{kind}="{" ".join(flags)}"' in got["format"], where
    assert got["dependencies"] == [
        {
            "name": d.name,
            "hash": d.hash,
            "version": d.version,
            "deptypes": d.deptypes,
            "virtuals": d.virtuals,
            "spec": {"hash": d.hash} if d.is_binary else None,
        }
        for d in want.dependencies
    ], where


@pytest.fixture(scope="module")
def as_index_files(
    mirrors: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[GraphQLClient, dict[str, mo.Dag]]]:
    """Every real index file as its own tag, in one build."""
    out = tmp_path_factory.mktemp("index-files") / "ix"
    dags = {}
    sources = []
    for number, path in enumerate(_real_index_files(mirrors)):
        # A lone index needs --tag; a listing gives each its own tag.
        sources.append((f"t{number}", path))
        dags[f"t{number}"] = mo.load_index(path)
    listing = mb.write_listing(
        out.parent / "listing.json", {tag: [("root", str(path))] for tag, path in sources}
    )
    build_index([listing], out, strict=True)
    with serving(out) as client:
        yield client, dags


def test_every_index_file_gives_the_oracles_specs(
    as_index_files: tuple[GraphQLClient, dict[str, mo.Dag]],
) -> None:
    gql, dags = as_index_files
    for tag, dag in dags.items():
        check_specs(gql, tag, dag.expected_all(["root"]))


@pytest.mark.parametrize("folder", ["spack-test-v2_layout-unsigned-db-v7", DB8])
def test_a_v2_mirror_root_of_each_index(mirrors: Path, tmp_path: Path, folder: str) -> None:
    index = mirrors / folder / "index.json"
    mb.write_v2_mirror(index, tmp_path / "mirror")
    out = tmp_path / "ix"
    build_index([tmp_path / "mirror"], out, tag="develop", stack="e4s", strict=True)
    with serving(out) as gql:
        check_specs(gql, "develop", mo.load_index(index).expected_all(["e4s"]))


@pytest.fixture(scope="module")
def v3_mirror(mirrors: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, mo.Dag]:
    """The DB 8 index as a layout v3 mirror, with two views and tarball sizes (one above
    2^31 bytes: GraphQL's Int could not hold it)."""
    index = mirrors / DB8 / "index.json"
    dag = mo.load_index(index)
    binaries = dag.binaries()
    root = tmp_path_factory.mktemp("v3") / "mirror"
    views = {"e4s": binaries[:3], "ml": binaries[2:]}
    sizes = {digest: 3_000_000_000 + i for i, digest in enumerate(binaries)}
    mb.write_v3_mirror(
        index, root, views=views, sizes=sizes, signed=True, db_media_versions=(7, 8, 99)
    )
    return root, dag


def _v3_expected(dag: mo.Dag, root: Path) -> dict[str, mo.ExpectedSpec]:
    binaries = dag.binaries()
    stacks = {
        h: ["root", *(["e4s"] if h in binaries[:3] else []), *(["ml"] if h in binaries[2:] else [])]
        for h in binaries
    }
    sizes = {digest: 3_000_000_000 + i for i, digest in enumerate(binaries)}
    return dag.expected_all(stacks, sizes)


def test_a_v3_mirror_with_views_and_sizes(v3_mirror: tuple[Path, mo.Dag], tmp_path: Path) -> None:
    root, dag = v3_mirror
    build_index([root], tmp_path / "ix", tag="develop", strict=True)
    with serving(tmp_path / "ix") as gql:
        check_specs(gql, "develop", _v3_expected(dag, root))
        # The deprecated 32-bit field cannot hold these sizes: null, not an error.
        body = gql("{ specs(first: 1) { nodes { size sizeBytes } } }")
        assert body["data"]["specs"]["nodes"] == [{"size": None, "sizeBytes": 3_000_000_000.0}]


@pytest.mark.parametrize("folder", ["spack-test-v2_layout-signed", "spack-test-legacy_yaml-db-v6"])
def test_a_mirror_of_spec_files_without_an_index(
    mirrors: Path, tmp_path: Path, folder: str
) -> None:
    """Signed `.spec.json.sig` and legacy `.spec.yaml` files, read as update-index would."""
    spec_files = mo.spec_files_in(mirrors / folder) + mo.spec_files_in(
        mirrors / folder / "build_cache"
    )
    assert spec_files
    cache = tmp_path / "mirror" / "build_cache"
    cache.mkdir(parents=True)
    for path in spec_files:
        shutil.copy(path, cache / path.name)
    build_index([tmp_path / "mirror"], tmp_path / "ix", tag="develop", strict=True)
    with serving(tmp_path / "ix") as gql:
        check_specs(gql, "develop", mo.load_spec_files(spec_files).expected_all(["root"]))


def test_everything_over_http(
    mirrors: Path, v3_mirror: tuple[Path, mo.Dag], tmp_path: Path
) -> None:
    """The same sources served by a real HTTP server: a v3 root, a v2 root, an index file."""
    www = tmp_path / "www"
    shutil.copytree(v3_mirror[0], www / "v3mirror")
    mb.write_v2_mirror(mirrors / DB8 / "index.json", www / "v2mirror")
    shutil.copy(mirrors / "spack-test-v2_layout-unsigned-db-v7" / "index.json", www / "db7.json")
    listing = mb.write_listing(
        www / "cache_spack_io_index.json",
        {"v3": [("root", "v3mirror")], "v2": [("root", "v2mirror")], "db7": [("root", "db7.json")]},
    )
    assert listing.exists()
    out = tmp_path / "ix"
    with MirrorHTTPServer(www) as server, HttpReader(None, timeout=5, retries=0) as reader:
        build_index([server.url_for("cache_spack_io_index.json")], out, strict=True, reader=reader)
    dag8 = mo.load_index(mirrors / DB8 / "index.json")
    with serving(out) as gql:
        # Over HTTP a v3 mirror's views and spec manifests cannot be listed: root only.
        check_specs(gql, "v3", dag8.expected_all(["root"]))
        check_specs(gql, "v2", dag8.expected_all(["root"]))
        db7 = mo.load_index(mirrors / "spack-test-v2_layout-unsigned-db-v7" / "index.json")
        check_specs(gql, "db7", db7.expected_all(["root"]))


# Dependencies: `^` and dependsOn against the oracle's walk of the DAG.

DEPENDENCY_QUERIES: list[tuple[str, mo.Constraint | None, list[mo.Constraint]]] = [
    ("^gcc", None, [mo.Constraint(name="gcc")]),
    ("^libelf", None, [mo.Constraint(name="libelf")]),
    ("libdwarf ^libelf", mo.Constraint(name="libdwarf"), [mo.Constraint(name="libelf")]),
    ("^gcc-runtime", None, [mo.Constraint(name="gcc-runtime")]),
    ("^gcc target=aarch64", None, [mo.Constraint(name="gcc", target="aarch64")]),
    ("^gcc target=m1", None, [mo.Constraint(name="gcc", target="m1")]),
    (
        "^gcc@10.2.1 ^compiler-wrapper",
        None,
        [mo.Constraint(name="gcc", version="10.2.1"), mo.Constraint(name="compiler-wrapper")],
    ),
    ("^libelf %gcc", None, [mo.Constraint(name="libelf", compiler="gcc")]),
    ("^zlib", None, [mo.Constraint(name="zlib")]),
    ("libelf ^gcc", mo.Constraint(name="libelf"), [mo.Constraint(name="gcc")]),
    ("^gcc languages=c,c++", None, [mo.Constraint(name="gcc", variants=("languages=c,c++",))]),
]


@pytest.mark.parametrize(
    ("query", "root", "deps"), DEPENDENCY_QUERIES, ids=[q[0] for q in DEPENDENCY_QUERIES]
)
def test_dependency_queries_match_the_oracle(
    as_index_files: tuple[GraphQLClient, dict[str, mo.Dag]],
    query: str,
    root: mo.Constraint | None,
    deps: list[mo.Constraint],
) -> None:
    gql, dags = as_index_files
    for tag, dag in dags.items():
        want = dag.matching(root, deps)
        got = gql.data(
            "query($q: String!, $t: String) { specs(query: $q, tag: $t, first: 100) "
            "{ totalCount nodes { hash } } }",
            q=query,
            t=tag,
        )["specs"]
        assert [n["hash"] for n in got["nodes"]] == want, (tag, query)
        filter_ = _depends_on_filter(deps[0]) if len(deps) == 1 and root is None else None
        if filter_ is not None:
            by_filter = gql.data(
                "query($f: SpecFilter, $t: String) { specs(filter: $f, tag: $t, first: 100) "
                "{ nodes { hash } } }",
                f={"dependsOn": filter_},
                t=tag,
            )["specs"]
            assert [n["hash"] for n in by_filter["nodes"]] == want, (tag, "dependsOn", query)


def _depends_on_filter(constraint: mo.Constraint) -> dict[str, Any] | None:
    if constraint.compiler or constraint.version:
        return None
    filter_: dict[str, Any] = {"package": {"eq": constraint.name}}
    if constraint.target:
        filter_["target"] = {"eq": constraint.target}
    if constraint.variants:
        filter_["variants"] = list(constraint.variants)
    return filter_


def test_dependents_are_the_binaries_with_a_direct_edge(
    as_index_files: tuple[GraphQLClient, dict[str, mo.Dag]],
) -> None:
    gql, dags = as_index_files
    for tag, dag in dags.items():
        for digest in dag.binaries():
            want = [h for h in dag.binaries() if digest in {e.hash for e in dag.node(h).edges}]
            got = gql.data(
                "query($h: String!, $t: String) { spec(hash: $h, tag: $t) "
                "{ dependents(first: 100) { totalCount nodes { hash } } } }",
                h=digest,
                t=tag,
            )["spec"]["dependents"]
            assert [n["hash"] for n in got["nodes"]] == want, (tag, digest)
