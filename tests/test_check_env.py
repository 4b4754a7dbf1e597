"""How much of an environment is cached, and why not the rest: `cachegql check` and
`nearest` against real Spack lockfiles (Spack's own test data, `tests/fixtures/lockfiles`),
lockfiles of versions 5 and 6 written as Spack writes them (`tests.question_data`), a
small build cache built for the purpose, and the shared mirror."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cachegql.index import (
    LockfileError,
    build_index,
    read_lock_node,
    read_lockfile,
)
from tests import mirror_builder as mb
from tests import question_data as qd
from tests.conftest import CLI, FIXTURES, GraphQLClient, serving, shared_or_skip

LOCKFILES = FIXTURES / "lockfiles"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("env")
    build_index([qd.write_cache(root / "mirror")], root / "ix", tag="develop")
    return root / "ix"


@pytest.fixture(scope="module")
def client(index: Path) -> Iterator[GraphQLClient]:
    with serving(index) as served:
        yield served


def check(lockfile: Path, index: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "check", str(lockfile), "--index", str(index), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("name", "version", "specs", "root", "compiler", "target"),
    [
        ("v1.lock", 1, 12, "rtc6yg6kszj6shpc4wfnnattyxcqdwbk", "clang@13.0.0", "x86_64"),
        # Keyed by build hash: both roots are one DAG hash (build deps are not hashed).
        ("v3.lock", 3, 13, "m5m2tbnyh2xnjd4nzwiuobvpk2wn4wix", "apple-clang@13.0.0", "skylake"),
        ("v4.lock", 4, 14, "dwlaaaedywmkwmhyk4jrv3j2o47we5zi", "gcc@4.5.0", "core2"),
    ],
)
def test_spacks_own_lockfiles_are_read(
    name: str, version: int, specs: int, root: str, compiler: str, target: str
) -> None:
    lockfile = read_lockfile((LOCKFILES / name).read_bytes(), name)
    assert (lockfile.version, len(lockfile.specs), lockfile.problems) == (version, specs, [])
    assert lockfile.roots[0] == ("dttop ^dtbuild1@0.5", root)
    dag = [lockfile.specs[h].node for h in lockfile.reachable(root)]
    assert len(dag) == 12 and dag[0].name == "dttop"
    assert {n.name for n in dag} >= {"dtbuild1", "dtlink5", "dtrun3"}
    assert lockfile.specs[root].compiler.normalized == compiler
    assert dag[0].target == target


@pytest.mark.parametrize("version", [5, 6])
def test_lockfiles_of_spack_022_and_10_are_read(version: int) -> None:
    lockfile = read_lockfile(qd.environment(version), "spack.lock")
    hdf5 = lockfile.specs[lockfile.roots[0][1]]
    assert hdf5.compiler.name == "gcc" and hdf5.compiler.version == "13.2.0"
    assert [e.name for e in hdf5.node.edges][:1] == ["zlib"]
    externals = [s.node.name for s in lockfile.specs.values() if s.external]
    assert externals == (["gcc"] if version == 6 else [])


@pytest.mark.parametrize("version", [4, 5, 6])
def test_check_prints_coverage_and_the_nearest_binaries(
    index: Path, tmp_path: Path, version: int
) -> None:
    lock = tmp_path / "spack.lock"
    lock.write_bytes(qd.environment(version) if version > 4 else _as_v4(qd.environment(5)))
    result = check(lock, index)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["hdf5", "~mpi", "1/2", "cached", "50%"]
    assert lines[2].split() == ["openmpi", "1/1", "cached", "100%"]
    assert lines[3].split() == ["overall", "2/3", "cached", "66%"]
    missing = result.stdout.split("\nmissing ", 1)[1].splitlines()
    assert missing[0].startswith("hdf5@1.14.3 ~mpi +shared arch=linux-ubuntu22.04-zen3 %gcc@13.2.0")
    # Ranked: the zen2 build of the same spec first, one difference that does not block.
    assert "arch=linux-ubuntu22.04-zen2" in missing[1]
    assert missing[2].strip() == "- built for zen2: runs on your zen3"
    assert "arch=linux-ubuntu22.04-zen3" in missing[3]
    assert [m.strip() for m in missing[4:6]] == [
        "- has +mpi, you asked ~mpi",
        "- depends on mpich, yours does not",
    ]


def _as_v4(data: bytes) -> bytes:
    """A version 5 lockfile written as version 4 (dependency `type` lists)."""
    document = json.loads(data)
    document["_meta"]["lockfile-version"] = 4
    for node in document["concrete_specs"].values():
        node["dependencies"] = [
            {"name": d["name"], "hash": d["hash"], "type": d["parameters"]["deptypes"]}
            for d in node["dependencies"]
        ]
    return json.dumps(document).encode()


def test_check_json_and_all_cached(index: Path, tmp_path: Path) -> None:
    cache = qd.cache_nodes()
    zlib = next(n for n in cache.values() if n["name"] == "zlib")
    lock = tmp_path / "spack.lock"
    lock.write_bytes(qd.lockfile(6, [zlib], [("zlib", zlib["hash"])]))
    result = check(lock, index, "--json")
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["total"], body["cached"], body["externals"]) == (1, 1, 1)
    assert body["roots"] == [{"spec": "zlib", "hash": zlib["hash"], "total": 1, "cached": 1}]
    assert [s["name"] for s in body["specs"]] == ["zlib", "gcc"]


def test_check_on_spacks_v4_lockfile_against_its_own_nodes(tmp_path: Path) -> None:
    lock = json.loads((LOCKFILES / "v4.lock").read_text())
    nodes = {h: n for h, n in lock["concrete_specs"].items() if n["name"] != "dtlink3"}
    other = dict(lock["concrete_specs"]["bjutz3a4tpnv32kvrqrutirhjfpq7jvo"], version="2.0")
    other["hash"] = qd.digest("dtlink3@2.0")
    nodes[other["hash"]] = other
    mb.write_v2_mirror(mb.make_index(nodes, version="7"), tmp_path / "mirror")
    build_index([tmp_path / "mirror" / "build_cache"], tmp_path / "ix", tag="develop")
    result = check(LOCKFILES / "v4.lock", tmp_path / "ix", "--nearest", "1")
    assert result.returncode == 1, result.stderr
    assert "overall                  13/14 cached   92%" in result.stdout
    missing = result.stdout.split("\nmissing ", 1)[1].splitlines()
    assert missing[0] == "dtlink3@1.0 arch=test-debian6-core2 %gcc@4.5.0 /bjutz3a"
    assert missing[1].startswith(f"  nearest /{other['hash'][:7]} dtlink3@2.0")
    assert [m.strip() for m in missing[2:]] == ["- version 2.0, you asked 1.0"]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (
            b'{"_meta": {"lockfile-version": 4},\n "roots": [,]}',
            "not valid JSON at line 2, column 12",
        ),
        (b"[]", "a lockfile is a JSON object, not a list"),
        (b'{"roots": [], "concrete_specs": {}}', "'_meta.lockfile-version' is missing"),
        (
            b'{"_meta": {"lockfile-version": 9}}',
            "'_meta.lockfile-version' 9 is not supported (1 to 6 are)",
        ),
        (
            b'{"_meta": {"lockfile-version": 4}, "roots": {}, "concrete_specs": {}}',
            "'roots' must be a list",
        ),
        (
            b'{"_meta": {"lockfile-version": 4}, "roots": [{}], "concrete_specs": {}}',
            "roots[0] has no 'hash'",
        ),
        (b'{"_meta": {"lockfile-version": 4}, "roots": []}', "'concrete_specs' must be an object"),
        (
            b'{"_meta": {"lockfile-version": 6}, "roots": [], "concrete_specs": {}}',
            "'concrete_specs' is empty: nothing in the environment is concretized",
        ),
    ],
)
def test_a_malformed_lockfile_is_exit_2_naming_line_or_key(
    index: Path, tmp_path: Path, content: bytes, needle: str
) -> None:
    lock = tmp_path / "spack.lock"
    lock.write_bytes(content)
    result = check(lock, index)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {lock}: ") and needle in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_bad_node_is_named_and_the_rest_is_checked(index: Path, tmp_path: Path) -> None:
    document = json.loads(qd.environment(5))
    hdf5 = next(h for h, n in document["concrete_specs"].items() if n["name"] == "hdf5")
    del document["concrete_specs"][hdf5]["arch"]
    lock = tmp_path / "spack.lock"
    lock.write_text(json.dumps(document))
    result = check(lock, index)
    assert result.returncode == 2
    assert f"error: {lock}: concrete_specs.{hdf5}: no 'arch' object" in result.stderr
    assert f"roots: 'hdf5 ~mpi' pins {hdf5}, which concrete_specs lacks" in result.stderr
    assert "openmpi" in result.stdout  # the rest is still checked


def test_a_missing_lockfile_or_index_is_exit_2(index: Path, tmp_path: Path) -> None:
    result = check(tmp_path / "nope.lock", index)
    assert result.returncode == 2 and "nope.lock: No such file or directory" in result.stderr
    lock = tmp_path / "spack.lock"
    lock.write_bytes(qd.environment(6))
    result = check(lock, index, "--tag", "v9")
    assert result.returncode == 2 and result.stderr.startswith("error: ")


NEAREST = "query($s: String!, $n: Int) { nearest(spec: $s, first: $n) { spec { target variants { raw } } differences usable } }"  # noqa: E501


def test_nearest_through_the_api(client: GraphQLClient) -> None:
    found = client.data(NEAREST, s="hdf5@1.14 ~mpi target=zen3", n=3)["nearest"]
    assert found[0]["differences"] in (
        ["has +mpi, you asked ~mpi"],
        ["built for zen2: runs on your zen3"],
    )
    assert all(n["usable"] for n in found)
    haswell = client.data(NEAREST, s="hdf5 +mpi target=haswell ^mpich", n=20)["nearest"]
    assert haswell[0]["spec"]["target"] == "haswell" and haswell[0]["differences"] == []
    blocked = [n for n in haswell if not n["usable"]]
    assert {n["spec"]["target"] for n in blocked} == {"zen", "zen2", "zen3", "aarch64"}
    assert "built for zen3: does not run on haswell" in {
        d for n in blocked for d in n["differences"]
    }
    assert haswell.index(blocked[0]) > max(i for i, n in enumerate(haswell) if n["usable"])
    assert client.data(NEAREST, s="nosuchpackage", n=3)["nearest"] == []
    refused = client.error(NEAREST, s="hdf5", n=-1)  # as a connection's `first`
    assert refused["message"] == "'first' must be 0 or more, got -1"
    assert refused["extensions"]["code"] == "BAD_USER_INPUT"
    assert client.data(NEAREST, s="hdf5", n=0)["nearest"] == []


def test_nearest_takes_a_lockfile_node(client: GraphQLClient) -> None:
    document = json.loads(qd.environment(6))
    node = next(n for n in document["concrete_specs"].values() if n["name"] == "hdf5")
    found = client.data(NEAREST, s=json.dumps(node), n=2)["nearest"]
    assert found[0]["differences"] == ["built for zen2: runs on your zen3"]
    assert found[1]["differences"] == [
        "has +mpi, you asked ~mpi",
        "depends on mpich, yours does not",
    ]


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("+mpi", "nearest needs a package name"),
        ("hdf5 target=zen9:", "unknown microarchitecture 'zen9'"),
        ('{"name": "hdf5"', "not valid JSON at line 1"),
        ('{"name": "hdf5", "version": "1"}', "the spec node cannot be read: no 'arch' object"),
        # found by mutating a lockfile's every value: a traceback, an internal error
        (
            '{"name": "hdf5", "version": 1180591620717411303424}',
            "the spec node cannot be read: a value no Spack lockfile holds",
        ),
    ],
)
def test_nearest_refuses_what_it_cannot_read(client: GraphQLClient, spec: str, needle: str) -> None:
    error = client.error(NEAREST, s=spec, n=1)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert needle in error["message"]


def test_read_lock_node_refuses_a_list() -> None:
    with pytest.raises(LockfileError, match="a spec node is a JSON object"):
        read_lock_node("[1]")


def test_the_shared_mirror_covers_its_own_zlib(tmp_path: Path) -> None:
    mirror = shared_or_skip() / "mirrors" / "spack-test-legacy_yaml-db-v6"
    if not mirror.is_dir():
        pytest.skip(f"{mirror} not found")
    build_index([mirror], tmp_path / "ix", tag="develop")
    installs = json.loads((mirror / "index.json").read_text())["database"]["installs"]
    ((digest, record),) = installs.items()
    node: dict[str, Any] = dict(record["spec"], hash=digest)
    unshared = dict(node, parameters=dict(node["parameters"], shared=False))
    unshared["hash"] = qd.digest("zlib ~shared")
    document = {
        "_meta": {"file-type": "spack-lockfile", "lockfile-version": 4, "specfile-version": 3},
        "roots": [
            {"hash": digest, "spec": "zlib"},
            {"hash": unshared["hash"], "spec": "zlib~shared"},
        ],
        "concrete_specs": {digest: node, unshared["hash"]: unshared},
    }
    lock = tmp_path / "spack.lock"
    lock.write_text(json.dumps(document))
    result = check(lock, tmp_path / "ix", "--json")
    assert result.returncode == 1, result.stderr
    body = json.loads(result.stdout)
    assert [(r["spec"], r["cached"]) for r in body["roots"]] == [("zlib", 1), ("zlib~shared", 0)]
    (near,) = body["specs"][1]["nearest"]
    assert near["hash"] == digest and near["differences"] == ["has +shared, you asked ~shared"]


CHECK = """query($lock: String!, $n: Int) { checkEnvironment(lockfile: $lock, nearest: $n) {
  tag lockfileVersion total cached externals problems
  roots { spec total cached }
  specs { name cached external nearest { spec { target } differences usable } } } }"""


def test_check_environment_through_the_api(client: GraphQLClient) -> None:
    found = client.data(CHECK, lock=qd.environment(6).decode(), n=2)["checkEnvironment"]
    assert (found["lockfileVersion"], found["total"], found["cached"], found["externals"]) == (
        6,
        3,
        2,
        1,
    )
    assert found["roots"] == [
        {"spec": "hdf5 ~mpi", "total": 2, "cached": 1},
        {"spec": "openmpi", "total": 1, "cached": 1},
    ]
    hdf5 = found["specs"][0]
    assert (hdf5["name"], hdf5["cached"]) == ("hdf5", False)
    assert [n["spec"]["target"] for n in hdf5["nearest"]] == ["zen2", "zen3"]
    assert hdf5["nearest"][0]["differences"] == ["built for zen2: runs on your zen3"]
    assert all(not s["nearest"] for s in found["specs"][1:])


def test_check_environment_refuses_a_malformed_lockfile(client: GraphQLClient) -> None:
    error = client.error(CHECK, lock='{"_meta": {"lockfile-version": 4},\n "roots": [,]}', n=1)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "the lockfile: not valid JSON at line 2, column 12" in error["message"]


def test_the_batched_ranking_is_the_exhaustive_one(tmp_path: Path) -> None:
    """Dependencies are read only for the best ranked binaries: the answer must be the
    ranking of every binary with all its differences."""
    from cachegql.demo import MirrorConfig, write_mirror
    from cachegql.index import IndexStore, Wanted, nearest
    from cachegql.index.query.nearest import differences

    summary = write_mirror(MirrorConfig(specs=600, packages=6, stacks=2, seed=3), tmp_path)
    build_index([summary.mirror], tmp_path / "ix", tag="develop")
    store = IndexStore(tmp_path / "ix")
    try:
        snapshot = store.snapshot()
        compared = 0
        for name in ("zlib", *sorted(snapshot.package_ids)[:5]):
            package_id = snapshot.package_id(name)
            if package_id is None:
                continue
            rows = list(range(*snapshot.package_range(package_id)))
            some = snapshot.specs(rows[:1])[0]
            deps = snapshot.dependencies(rows[:1])[0] or []
            wanted = Wanted(
                name=name,
                variants=some.variants[:1],
                target="zen3",
                dependencies=tuple((d.name, d.hash) for d in deps if "link" in d.deptypes),
                exact=True,
            )
            every = [
                (not any(x.blocking for x in found), found, spec)
                for spec, found in (
                    (spec, differences(wanted, spec, d))
                    for spec, d in zip(
                        snapshot.specs(rows), snapshot.dependencies(rows), strict=True
                    )
                )
            ]
            every.sort(key=lambda item: (not item[0], len(item[1]), item[2].hash))
            found = nearest(snapshot, wanted, 5)
            assert [n.spec.hash for n in found] == [item[2].hash for item in every[:5]]
            assert [list(n.differences) for n in found] == [item[1] for item in every[:5]]
            compared += len(rows)
        assert compared > 3 * 32  # more than one batch of dependencies was needed
    finally:
        store.close()


def test_check_reads_stdin_and_refuses_what_is_not_text(index: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [CLI, "check", "-", "--index", str(index)],
        input=qd.environment(6),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.decode().startswith("<stdin> (lockfile v6): 4 specs, 1 external")
    lock = tmp_path / "spack.lock"
    lock.write_bytes(b'{"_meta": "\xff"}')
    refused = check(lock, index)
    assert refused.returncode == 2 and "not UTF-8 text" in refused.stderr


def test_check_environment_refuses_more_specs_than_it_prices(index: Path) -> None:
    from cachegql.index import IndexStore
    from cachegql.schema import Context, build_schema
    from cachegql.schema.environment import MAX_LOCKED_SPECS

    zlib = next(n for n in qd.cache_nodes().values() if n["name"] == "zlib")
    many = [dict(zlib, hash=qd.digest(f"zlib {i}")) for i in range(MAX_LOCKED_SPECS + 1)]
    lock = qd.lockfile(5, many, [("zlib", many[0]["hash"])]).decode()
    store = IndexStore(index)
    try:
        result = build_schema().execute_sync(
            CHECK, variable_values={"lock": lock, "n": 1}, context_value=Context(store=store)
        )
    finally:
        store.close()
    assert (
        result.errors and "the lockfile pins 5,001 specs; at most 5,000" in result.errors[0].message
    )


def test_a_lockfile_value_beyond_64_bits_is_named_by_its_key() -> None:
    document = {
        "_meta": {"lockfile-version": 6},
        "roots": [],
        "concrete_specs": {"k" * 32: {"name": "hdf5", "version": 2**70}},
    }
    with pytest.raises(
        LockfileError, match=f"spack.lock: concrete_specs.{'k' * 32}: a value no Spack lockfile"
    ):
        read_lockfile(json.dumps(document).encode(), "spack.lock")
