"""Tests of the build-cache test infrastructure: the oracle (mirror_oracle), the mirror builder
(mirror_builder) and the HTTP server (http_fixture), against Spack's real sample files in
../shared/mirrors and against hand-made indexes of the forms the samples lack."""

from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests import mirror_builder as mb
from tests import mirror_oracle as mo
from tests.conftest import shared_or_skip
from tests.http_fixture import MirrorHTTPServer, http_server_fixture  # noqa: F401

DB6 = "spack-test-legacy_yaml-db-v6"
DB7 = "spack-test-v2_layout-unsigned-db-v7"
DB8 = "spack-test-v2_layout-unsigned-db-v8"
SIGNED = "spack-test-v2_layout-signed"
LIBDWARF8 = "u5uz3dcch5if4eve4sef67o2rf2lbfgh"
LIBELF8 = "jr3yipyxyjulcdvckwwwjrrumis7glpa"
LIBELF_OLD = "rqh2vuf6fqwkmipzgi2wjx352mq7y7ez"
LIBDWARF_OLD = "sk2gqqz4n5njmvktycnd25wq25jxiqkr"
GCC8 = "vd7v4ssgnoqdplgxyig3orum67n4vmhq"
GCC_RUNTIME8 = "izgzpzeljwairalfjm3k6fntbb64nt6n"
WRAPPER8 = "qeehcxyvluwnihsc2qxstmpomtxo3lrc"
ZLIB6 = "t5mczux3tfqpxwmg7egp7axy2jvyulqk"


def mirrors() -> Path:
    """../shared/mirrors, or skip (fail when CI=true) like the rest of the corpus suite."""
    folder = shared_or_skip() / "mirrors"
    if not folder.is_dir():
        message = f"corpus suite: {folder} not found"
        if os.environ.get("CI") == "true":
            pytest.fail(message + "; CI=true requires it")
        pytest.skip(message)
    return folder


def sample_indexes() -> list[Path]:
    """Every Spack DB index among the samples (build_cache/_pgp/index.json is a key index)."""
    return [p for p in sorted(mirrors().rglob("index.json")) if b'"database"' in p.read_bytes()]


def without_binary_flags(spec: mo.ExpectedSpec) -> dict[str, Any]:
    fields = spec.to_dict()
    for dependency in fields["dependencies"]:
        del dependency["is_binary"]
    return fields


def fake_hash(seed: str) -> str:
    return base64.b32encode(hashlib.sha1(seed.encode()).digest()).decode().lower()[:32]


def node(
    name: str,
    version: str,
    deps: Sequence[Mapping[str, Any]] = (),
    parameters: Mapping[str, Any] | None = None,
    target: Any = "x86_64_v3",
    **extra: Any,
) -> dict[str, Any]:
    """A DB 8/9 node, hash from name@version."""
    return {
        "name": name,
        "version": version,
        "arch": {"platform": "linux", "platform_os": "ubuntu24.04", "target": target},
        "namespace": "builtin",
        "parameters": {"build_system": "generic", "cflags": [], **(parameters or {})},
        "dependencies": list(deps),
        **extra,
        "hash": fake_hash(f"{name}@{version}"),
    }


def edge(target: Mapping[str, Any], deptypes: Sequence[str], *virtuals: str) -> dict[str, Any]:
    return {
        "name": target["name"],
        "hash": target["hash"],
        "parameters": {"deptypes": list(deptypes), "virtuals": list(virtuals)},
    }


def db8_sample() -> tuple[bytes, dict[str, dict[str, Any]]]:
    """A small DB 8 index: zlib and hdf5 (mpich, cmake) built by llvm (c, cxx) and gcc
    (fortran); gcc and llvm are externals outside the cache; mpich has a dangling dependency."""
    gcc = node("gcc", "13.2.0", external={"path": "/usr"})
    llvm = node("llvm", "18.1.0", external={"path": "/usr"})
    zlib = node("zlib", "1.3.1", [edge(llvm, ["build"], "c")], {"shared": True, "pic": False})
    cmake = node("cmake", "3.30.5", [edge(gcc, ["build"], "c", "cxx")])
    mpich = node(
        "mpich",
        "4.1.2",
        [
            edge(gcc, ["build"], "c", "cxx", "fortran"),
            {"name": "hwloc", "hash": fake_hash("hwloc"), "parameters": {"deptypes": ["link"]}},
        ],
        {"fortran": True, "netmod": "ofi", "pmi": ["pmix", "cray"]},
    )
    hdf5 = node(
        "hdf5",
        "1.14.5",
        [
            edge(gcc, ["build"], "fortran"),
            edge(llvm, ["build"], "cxx", "c"),
            edge(cmake, ["build"]),
            edge(mpich, ["build", "link"], "mpi"),
            edge(zlib, ["build", "link"], "zlib-api"),
        ],
        {
            "mpi": True,
            "cxx": False,
            "api": "default",
            "patches": ["f" * 64, "0123456789" * 6 + "abcd"],
            "languages": [],
            "cflags": ["-O2", "-g"],
            "ldflags": [],
        },
        provided_virtuals=["hdf5-api"],
    )
    nodes = {n["name"]: n for n in (gcc, llvm, zlib, cmake, mpich, hdf5)}
    index = mb.make_index(
        {n["hash"]: n for n in nodes.values()}, "8", outside=[gcc["hash"], llvm["hash"]]
    )
    return index, nodes


# -- the oracle on the real samples -----------------------------------------------------------


@pytest.mark.corpus
def test_every_sample_file_reads() -> None:
    indexes = sample_indexes()
    assert [p.parent.name for p in indexes] == [DB6, DB7, DB8]
    for path in indexes:
        stored = (path.parent / "index.json.hash").read_text().strip()
        assert stored == hashlib.sha256(path.read_bytes()).hexdigest(), path
        dag = mo.load_index(path)
        assert dag.db_version in ("6", "7", "8")
        for h, spec in dag.expected_all(["root"]).items():
            assert len(h) == 32 and spec.hash == h
            assert spec.name and spec.version and spec.os and spec.platform and spec.target
            assert spec.compiler.raw and spec.stacks == ["root"] and spec.size is None
            assert all(d.hash in dag.nodes for d in spec.dependencies), "no dangling samples"
    spec_files = mo.spec_files_in(mirrors())
    roots = []
    for path in spec_files:
        spec_file = mo.read_spec_file(path)
        roots.append((spec_file.format_version, spec_file.root))
        assert spec_file.root in path.name
        assert spec_file.dag.binaries() == [spec_file.root]
        spec = spec_file.dag.expected(spec_file.root)
        assert spec.name and spec.version and spec.os and spec.target and spec.compiler.raw
    assert roots == [(1, ZLIB6), (4, LIBELF_OLD), (5, LIBDWARF8)]


@pytest.mark.corpus
def test_db8_libdwarf_by_hand() -> None:
    dag = mo.load_index(mirrors() / DB8 / "index.json")
    spec = dag.expected(LIBDWARF8, ["root", "e4s"], 1234)
    assert (spec.name, spec.version, spec.namespace) == ("libdwarf", "20130729", "builtin.mock")
    assert (spec.os, spec.platform, spec.target) == ("debian6", "test", "m1")
    assert spec.compiler == mo.ExpectedCompiler("gcc", "10.2.1", "gcc@10.2.1", "c,cxx=gcc@10.2.1")
    assert spec.variants == ["build_system=generic"] and spec.flags == {}
    assert spec.stacks == ["e4s", "root"] and spec.size == 1234
    assert [
        (d.name, d.hash[:7], d.deptypes, d.virtuals, d.version, d.is_binary)
        for d in spec.dependencies
    ] == [
        ("compiler-wrapper", "qeehcxy", ["build"], [], "1.0", True),
        ("gcc", "vd7v4ss", ["build"], ["c", "cxx"], "10.2.1", False),
        ("gcc-runtime", "izgzpze", ["link"], [], "10.2.1", True),
        ("libelf", "jr3yipy", ["build", "link"], [], "0.8.13", True),
    ]


@pytest.mark.corpus
def test_db8_compilers_and_binaries_by_hand() -> None:
    dag = mo.load_index(mirrors() / DB8 / "index.json")
    # gcc is an external (in_buildcache: false): a node of the DAG, not a binary.
    assert GCC8 in dag.nodes and GCC8 not in dag.binaries() and dag.nodes[GCC8].external
    assert len(dag.nodes) == 7 and len(dag.binaries()) == 6
    raw = {h[:7]: dag.compiler(h).raw for h in dag.binaries()}
    assert raw == {
        "qeehcxy": "none",  # compiler-wrapper
        "izgzpze": "none",  # gcc-runtime: gcc is a build dependency with no language virtual
        "sk2gqqz": "gcc@=10.2.1",  # migrated from spec file v4: annotations.compiler
        "u5uz3dc": "c,cxx=gcc@10.2.1",
        "jr3yipy": "c=gcc@10.2.1",
        "rqh2vuf": "gcc@=10.2.1",
    }
    assert dag.compiler(LIBELF_OLD) == mo.ExpectedCompiler(
        "gcc", "10.2.1", "gcc@10.2.1", "gcc@=10.2.1"
    )
    assert dag.compiler(GCC_RUNTIME8) == mo.NO_COMPILER
    # gcc's target is a plain string, the others a microarchitecture object.
    assert dag.nodes[GCC8].target == "aarch64"
    assert {dag.nodes[h].target for h in dag.binaries()} == {"m1", "core2"}


@pytest.mark.corpus
def test_db8_dependency_queries_by_hand() -> None:
    dag = mo.load_index(mirrors() / DB8 / "index.json")
    assert [n.name for n in dag.reachable(LIBDWARF8)] == [
        "compiler-wrapper",
        "gcc",
        "gcc-runtime",
        "libelf",
    ]
    assert dag.depends_on(LIBDWARF8, mo.Constraint(name="gcc", version="10.2.1", target="aarch64"))
    assert not dag.depends_on(LIBDWARF8, mo.Constraint(name="gcc", target="m1"))
    assert not dag.depends_on(LIBDWARF8, mo.Constraint(name="libdwarf")), (
        "the spec itself is excluded"
    )
    assert not dag.depends_on(LIBDWARF_OLD, mo.Constraint(name="gcc"))
    assert dag.depends_on(
        LIBDWARF_OLD, mo.Constraint(name="libelf", target="core2", compiler="gcc")
    )
    # libelf^gcc: through gcc-runtime too (any deptype, any depth).
    assert dag.matching(deps=[mo.Constraint(name="gcc")]) == [GCC_RUNTIME8, LIBDWARF8, LIBELF8]
    assert dag.matching(
        mo.Constraint(name="libdwarf"), [mo.Constraint(name="libelf", compiler="gcc")]
    ) == [
        LIBDWARF_OLD,
        LIBDWARF8,
    ]
    assert dag.matching(
        mo.Constraint(name="libdwarf"), [mo.Constraint(name="libelf", target="m1")]
    ) == [LIBDWARF8]
    assert dag.matching(
        deps=[mo.Constraint(name="gcc-runtime"), mo.Constraint(name="compiler-wrapper")]
    ) == [
        LIBDWARF8,
        LIBELF8,
    ]
    assert dag.matching(mo.Constraint(compiler="gcc", compiler_version="10.2.1", target="m1")) == [
        LIBDWARF8,
        LIBELF8,
    ]
    assert (
        dag.matching(mo.Constraint(variants=("build_system=generic",), os="debian6"))
        == dag.binaries()
    )
    assert dag.matching(mo.Constraint(namespace="builtin")) == []
    assert dag.depends_on(LIBELF8, lambda n: n.external)


@pytest.mark.corpus
def test_db7_by_hand() -> None:
    dag = mo.load_index(mirrors() / DB7 / "index.json")
    assert dag.binaries() == [LIBDWARF_OLD, LIBELF_OLD]
    spec = dag.expected(LIBDWARF_OLD)
    assert spec.compiler == mo.ExpectedCompiler("gcc", "10.2.1", "gcc@10.2.1", "gcc@10.2.1")
    assert spec.target == "core2" and spec.variants == ["build_system=generic"]
    # A DB 7 edge already has the spec file v4 form: parameters.deptypes/virtuals.
    assert spec.dependencies == [
        mo.ExpectedDependency("libelf", LIBELF_OLD, ["build", "link"], [], "0.8.13", True)
    ]


@pytest.mark.corpus
def test_db6_zlib_and_the_legacy_yaml() -> None:
    folder = mirrors() / DB6
    dag = mo.load_index(folder / "index.json")
    assert dag.binaries() == [ZLIB6], "the node's hash is `_hash` in this DB 6 file"
    spec = dag.expected(ZLIB6)
    assert spec.variants == ["+optimize", "+pic", "+shared"]
    assert spec.compiler == mo.ExpectedCompiler("gcc", "4.5.0", "gcc@4.5.0", "gcc@4.5.0")
    assert (spec.name, spec.version, spec.target, spec.namespace) == (
        "zlib",
        "1.2.11",
        "core2",
        "builtin.mock",
    )
    (yaml_path,) = folder.glob("*.spec.yaml")
    legacy = mo.read_spec_file(yaml_path)
    assert (legacy.format_version, legacy.root) == (1, ZLIB6)
    from_yaml = legacy.dag.expected(ZLIB6)
    # The one difference: the YAML says builtin_mock where the index says builtin.mock.
    assert from_yaml.namespace == "builtin_mock"
    assert from_yaml.to_dict() == {**spec.to_dict(), "namespace": "builtin_mock"}


@pytest.mark.corpus
def test_the_signed_spec_file() -> None:
    (path,) = (mirrors() / SIGNED / "build_cache").glob("*.spec.json.sig")
    signed = mo.read_spec_file(path)
    assert (signed.format_version, signed.root) == (4, LIBELF_OLD)
    from_index = mo.load_index(mirrors() / DB7 / "index.json").expected(LIBELF_OLD)
    assert signed.dag.expected(LIBELF_OLD).to_dict() == {
        **from_index.to_dict(),
        "namespace": "builtin_mock",
    }
    # A mirror of spec files only (no index, as in this sample) is read from its spec files.
    assert mo.load_spec_files([mirrors() / SIGNED]).binaries() == [LIBELF_OLD]


@pytest.mark.corpus
def test_the_spec_file_agrees_with_its_index() -> None:
    (path,) = (mirrors() / DB8).glob("*.spec.json")
    spec_file = mo.read_spec_file(path)
    assert spec_file.format_version == 5 and len(spec_file.dag.nodes) == 5
    index = mo.load_index(mirrors() / DB8 / "index.json")
    assert without_binary_flags(spec_file.dag.expected(LIBDWARF8)) == without_binary_flags(
        index.expected(LIBDWARF8)
    )
    # Alone, the spec file knows only its root as a binary.
    assert not any(d.is_binary for d in spec_file.dag.expected(LIBDWARF8).dependencies)


@pytest.mark.corpus
def test_the_samples_as_built_mirrors(tmp_path: Path) -> None:
    for number, path in enumerate(sample_indexes()):
        data = path.read_bytes()
        expected = mo.load_index(data).expected_all()
        v2 = mb.write_v2_mirror(
            path, tmp_path / f"v2-{number}", spec_files=mo.spec_files_in(path.parent)
        )
        assert (v2 / "index.json.hash").read_text() == hashlib.sha256(data).hexdigest()
        assert (v2 / "index.json").read_bytes() == data
        version = int(str(mo.load_index(data).db_version))
        v3 = mb.write_v3_mirror(path, tmp_path / f"v3-{number}", db_media_versions=(version,))
        assert mb.verify_v3_mirror(v3.root) == []
        assert v3.index_blob.read_bytes() == data
        assert set(v3.spec_manifests) == set(expected)
        for h, manifest in v3.spec_manifests.items():
            (spec_record,) = [
                r for r in mb.read_manifest(manifest)["data"] if "spec.v" in r["mediaType"]
            ]
            spec_file = mo.parse_spec_text(
                mb.blob_path(v3.root, spec_record["checksum"]).read_bytes()
            )
            assert spec_file.root == h
            assert without_binary_flags(spec_file.dag.expected(h)) == without_binary_flags(
                expected[h]
            )


# -- the oracle on the forms the samples lack -------------------------------------------------


def test_db8_compilers_variants_flags_and_dependencies() -> None:
    index, nodes = db8_sample()
    dag = mo.load_index(index)
    hdf5, mpich, zlib, cmake = (nodes[n]["hash"] for n in ("hdf5", "mpich", "zlib", "cmake"))
    assert dag.binaries() == [cmake, hdf5, mpich, zlib]
    spec = dag.expected(hdf5)
    # Ordered by first language: llvm (c first), then gcc (fortran); languages in c,cxx order.
    assert spec.compiler == mo.ExpectedCompiler(
        "llvm", "18.1.0", "llvm@18.1.0", "c,cxx=llvm@18.1.0 fortran=gcc@13.2.0"
    )
    assert spec.variants == [
        "~cxx",
        "+mpi",
        "api=default",
        "build_system=generic",
        "patches=0123456,fffffff",
    ]
    assert spec.flags == {"cflags": ["-O2", "-g"]}
    assert [(d.name, d.virtuals, d.is_binary) for d in spec.dependencies] == [
        ("gcc", ["fortran"], False),
        ("llvm", ["cxx", "c"], False),
        ("cmake", [], True),
        ("mpich", ["mpi"], True),
        ("zlib", ["zlib-api"], True),
    ]
    assert dag.expected(mpich).compiler.raw == "c,cxx,fortran=gcc@13.2.0"
    assert dag.expected(mpich).variants == [
        "+fortran",
        "build_system=generic",
        "netmod=ofi",
        "pmi=cray,pmix",
    ]
    assert dag.expected(zlib).variants == ["~pic", "+shared", "build_system=generic"]
    assert dag.expected(zlib).compiler == mo.ExpectedCompiler(
        "llvm", "18.1.0", "llvm@18.1.0", "c=llvm@18.1.0"
    )
    # A dangling hash: a dependency with no version, a node with only name and hash.
    (hwloc,) = [d for d in dag.expected(mpich).dependencies if d.name == "hwloc"]
    assert (hwloc.version, hwloc.is_binary, hwloc.deptypes, hwloc.virtuals) == (
        None,
        False,
        ["link"],
        [],
    )
    assert dag.depends_on(hdf5, mo.Constraint(name="hwloc"))
    assert not dag.depends_on(hdf5, mo.Constraint(name="hwloc", version="2.11.1"))
    assert dag.matching(deps=[mo.Constraint(name="mpich", variants=("+fortran", "pmi=pmix"))]) == [
        hdf5
    ]
    assert dag.matching(
        deps=[mo.Constraint(name="mpich", variants=("pmi=pmix,cray", "netmod:=ofi"))]
    ) == [hdf5]
    assert dag.matching(deps=[mo.Constraint(name="mpich", variants=("~fortran",))]) == []
    assert dag.matching(mo.Constraint(compiler="gcc")) == [cmake, hdf5, mpich], "%gcc: any compiler"
    assert dag.matching(mo.Constraint(compiler="llvm", compiler_version="=18.1.0")) == [hdf5, zlib]
    assert dag.matching(mo.Constraint(variants=("patches=0123456",))) == [hdf5]
    assert dag.matching(deps=[mo.Constraint(name="gcc", os="ubuntu24.04")]) == [cmake, hdf5, mpich]
    assert dag.matching(deps=[mo.Constraint(name="zlib", variants=("+shared",))]) == [hdf5]


def test_a_compiler_dependency_outside_the_index() -> None:
    gcc = node("gcc", "13.2.0")
    zlib = node("zlib", "1.3.1", [edge(gcc, ["build"], "c")])
    dag = mo.load_index(mb.make_index({zlib["hash"]: zlib}, "9"))
    assert dag.compiler(zlib["hash"]) == mo.ExpectedCompiler("gcc", None, "gcc", "c=gcc")
    # A language virtual on a link edge is no compiler.
    libc = node("glibc", "2.39")
    app = node("app", "1.0", [edge(libc, ["link"], "c")])
    assert mo.load_index(mb.make_index({app["hash"]: app})).compiler(app["hash"]) == mo.NO_COMPILER


def test_db5_name_keyed_nodes() -> None:
    zlib_hash, cmake_hash, app_hash = fake_hash("z"), fake_hash("c"), fake_hash("a")
    arch = {"platform": "linux", "platform_os": "centos7", "target": "haswell"}
    common = {"arch": arch, "compiler": {"name": "gcc", "version": "8.3.0"}, "namespace": "builtin"}
    nodes = {
        zlib_hash: {"zlib": {"version": "1.2.11", **common, "parameters": {"shared": True}}},
        cmake_hash: {"cmake": {"version": "3.16.1", **common, "parameters": {}}},
        app_hash: {
            "app": {
                "version": "2.0",
                **common,
                "parameters": {"cppflags": ["-DX"], "mode": "fast"},
                "dependencies": {
                    "zlib": {"hash": zlib_hash, "type": ["build", "link"]},
                    "cmake": {"hash": cmake_hash, "type": "build"},
                },
            }
        },
    }
    dag = mo.load_index(mb.make_index(nodes, "5", outside=[cmake_hash]))
    assert dag.binaries() == [app_hash, zlib_hash]
    spec = dag.expected(app_hash)
    assert (spec.name, spec.version, spec.target, spec.os) == ("app", "2.0", "haswell", "centos7")
    assert spec.compiler == mo.ExpectedCompiler("gcc", "8.3.0", "gcc@8.3.0", "gcc@8.3.0")
    assert spec.variants == ["mode=fast"] and spec.flags == {"cppflags": ["-DX"]}
    assert [(d.name, d.deptypes, d.version, d.is_binary) for d in spec.dependencies] == [
        ("zlib", ["build", "link"], "1.2.11", True),
        ("cmake", ["build"], "3.16.1", False),
    ]
    assert dag.depends_on(app_hash, mo.Constraint(name="cmake", version="3.16.1", compiler="gcc"))


def test_spec_files_of_spack_0_17_name_nodes_by_build_or_full_hash() -> None:
    def v2_node(name: str, deps: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "name": name,
            "version": "1.0",
            "arch": {"platform": "linux", "platform_os": "rhel8", "target": {"name": "zen2"}},
            "compiler": {"name": "gcc", "version": "=11.2.0"},
            "namespace": "builtin",
            "parameters": {},
            "dependencies": deps,
            "hash": fake_hash(name),
            "full_hash": fake_hash(name + "/full"),
            "build_hash": fake_hash(name + "/build"),
        }

    b = v2_node("b", [])
    c = v2_node("c", [])
    a = v2_node(
        "a",
        [
            {"name": "b", "build_hash": b["build_hash"], "type": ["build", "link"]},
            {"name": "c", "full_hash": c["full_hash"], "type": ["run"]},
        ],
    )
    text = json.dumps({"spec": {"_meta": {"version": 2}, "nodes": [a, b, c]}})
    spec_file = mo.parse_spec_text(mb.clearsign(text))
    assert (spec_file.format_version, spec_file.root) == (2, a["hash"])
    deps = spec_file.dag.expected(a["hash"]).dependencies
    assert [(d.name, d.hash, d.version) for d in deps] == [
        ("b", b["hash"], "1.0"),
        ("c", c["hash"], "1.0"),
    ]
    compiler = spec_file.dag.expected(a["hash"]).compiler
    assert compiler == mo.ExpectedCompiler("gcc", "11.2.0", "gcc@11.2.0", "gcc@=11.2.0")
    gzipped = mo.parse_spec_text(gzip.compress(text.encode()))
    assert gzipped.dag.expected(a["hash"]) == spec_file.dag.expected(a["hash"])


def test_yaml_versions_stay_strings() -> None:
    text = (
        "spec:\n- foo:\n    version: 1.10\n"
        "    arch: {platform: linux, platform_os: x, target: y}\n"
        "    compiler: {name: gcc, version: 10.0}\n"
        "    parameters: {cuda_arch: [80, 90], opt: true}\n"
        f"    hash: {fake_hash('foo')}\n"
    )
    spec_file = mo.parse_spec_text(text, yaml_format=True)
    spec = spec_file.dag.expected(spec_file.root)
    assert (spec.version, spec.compiler.raw) == ("1.10", "gcc@10.0")
    assert spec.variants == ["+opt", "cuda_arch=80,90"]


def test_clearsign_round_trip_with_dash_escaping() -> None:
    text = '{\n"a":1,\n"flags":[\n"-O2"\n]\n}\n-----END-looking line'
    signed = mb.clearsign(text)
    assert signed.startswith("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\n")
    assert "\n- -----END-looking line\n-----BEGIN PGP SIGNATURE-----\n" in signed
    assert mo.clearsigned_payload(signed) == text
    assert mo.clearsigned_payload(text) == text


def test_variant_holds() -> None:
    parameters = {"mpi": True, "cuda": False, "cuda_arch": ["70", "80"], "api": "v110"}
    holds = [
        "+mpi",
        "~cuda",
        "-cuda",
        "++mpi",
        "cuda_arch=80",
        "cuda_arch=80,70",
        "cuda_arch:='70,80'",
        "api==v110",
    ]
    for variant in holds:
        assert mo.variant_holds(parameters, variant), variant
    for variant in ("~mpi", "+cuda", "+missing", "cuda_arch=90", "api=v18", "cflags=-O2", "x="):
        assert not mo.variant_holds(parameters, variant), variant
    with pytest.raises(ValueError, match="not a variant"):
        mo.variant_holds(parameters, "what is this")


def test_listing_stacks() -> None:
    index, nodes = db8_sample()
    hdf5, zlib, mpich = (nodes[n]["hash"] for n in ("hdf5", "zlib", "mpich"))
    root = mo.load_index(index)
    e4s = mo.load_index(mb.view_index(json.loads(index), [hdf5, zlib]))
    ml = mo.load_index(mb.view_index(json.loads(index), [zlib]))
    stacks = mo.listing_stacks([("root", root), ("e4s", e4s), ("ml", ml)])
    assert stacks[zlib] == ["e4s", "ml", "root"]
    assert stacks[hdf5] == ["e4s", "root"] and stacks[mpich] == ["root"]
    assert nodes["gcc"]["hash"] not in stacks
    listing = mo.expected_listing([("e4s", e4s), ("ml", ml)], sizes={zlib: 99})
    assert sorted(listing) == sorted([hdf5, zlib])
    assert (listing[zlib].stacks, listing[zlib].size, listing[hdf5].size) == (
        ["e4s", "ml"],
        99,
        None,
    )
    # in the e4s view, mpich is a DAG node but no binary
    assert [d.is_binary for d in listing[hdf5].dependencies if d.name == "mpich"] == [False]


# -- the builder ------------------------------------------------------------------------------


def test_v2_mirrors(tmp_path: Path) -> None:
    index, _ = db8_sample()
    build_cache = mb.write_v2_mirror(index, tmp_path / "a")
    assert (build_cache / "index.json").read_bytes() == index
    assert (build_cache / "index.json.hash").read_text() == hashlib.sha256(index).hexdigest()
    assert not (
        mb.write_v2_mirror(index, tmp_path / "b", with_hash=False) / "index.json.hash"
    ).exists()
    mb.corrupt_v2_hash(tmp_path / "a")
    assert (build_cache / "index.json.hash").read_text() != hashlib.sha256(index).hexdigest()
    specs = mb.write_v2_spec_files(index, tmp_path / "specs")
    only_specs = mb.write_v2_mirror(None, tmp_path / "c", spec_files=specs)
    assert not (only_specs / "index.json").exists()
    assert sorted(p.name for p in only_specs.iterdir()) == sorted(p.name for p in specs)


@pytest.mark.parametrize("form", ["json", "signed", "yaml"])
def test_spec_files_of_an_index_read_back_as_the_index(tmp_path: Path, form: str) -> None:
    index, _ = db8_sample()
    paths = mb.write_v2_spec_files(
        index, tmp_path, signed=form == "signed", yaml_format=form == "yaml"
    )
    suffix = {"json": ".spec.json", "signed": ".spec.json.sig", "yaml": ".spec.yaml"}[form]
    assert len(paths) == 4 and all(p.name.endswith(suffix) for p in paths)
    assert mo.load_spec_files([tmp_path]).expected_all() == mo.load_index(index).expected_all()


def test_v3_mirror_shapes(tmp_path: Path) -> None:
    index, nodes = db8_sample()
    hdf5, zlib = nodes["hdf5"]["hash"], nodes["zlib"]["hash"]
    mirror = mb.write_v3_mirror(
        index, tmp_path, views={"e4s": [hdf5, zlib], "ml/cuda": [zlib]}, sizes={hdf5: 5_000_000_000}
    )
    assert mb.verify_v3_mirror(tmp_path) == []
    assert mirror.index_manifest == tmp_path / "v3/manifests/index/index.manifest.json"
    manifest = json.loads(mirror.index_manifest.read_text())
    (entry,) = manifest["data"]
    assert manifest["version"] == 3
    checksum = hashlib.sha256(index).hexdigest()
    assert entry == {
        "contentLength": len(index),
        "mediaType": "application/vnd.spack.db.v8+json",
        "compression": "none",
        "checksumAlgorithm": "sha256",
        "checksum": checksum,
    }
    assert (tmp_path / "blobs/sha256" / checksum[:2] / checksum).read_bytes() == index
    # views: each its own index blob, its binaries alone in_buildcache
    assert set(mirror.view_manifests) == {"e4s", "ml/cuda"}
    assert (
        mirror.view_manifests["ml/cuda"]
        == tmp_path / "v3/manifests/index/ml/cuda/index.manifest.json"
    )
    (view_entry,) = mb.read_manifest(mirror.view_manifests["e4s"])["data"]
    view = mo.load_index(mb.blob_path(tmp_path, view_entry["checksum"]).read_bytes())
    assert view.binaries() == sorted([hdf5, zlib], key=lambda h: (view.nodes[h].name, h))
    assert set(view.nodes) == set(mo.load_index(index).nodes)
    # spec manifests: tarball record (size), gzipped spec blob (spec file v5, root first)
    assert set(mirror.spec_manifests) == set(mo.load_index(index).binaries())
    path = mirror.spec_manifests[hdf5]
    assert path == tmp_path / f"v3/manifests/spec/hdf5/hdf5-1.14.5-{hdf5}.spec.manifest.json"
    tarball, spec = json.loads(path.read_text())["data"]
    assert tarball["mediaType"] == "application/vnd.spack.install.v2.tar+gzip"
    assert (tarball["compression"], tarball["contentLength"]) == ("gzip", 5_000_000_000)
    assert not mb.blob_path(tmp_path, tarball["checksum"]).exists()
    assert mirror.tarball_sizes[zlib] == mb.DEFAULT_TARBALL_SIZE
    assert (spec["mediaType"], spec["compression"]) == (
        "application/vnd.spack.spec.v5+json",
        "gzip",
    )
    blob = mb.blob_path(tmp_path, spec["checksum"]).read_bytes()
    assert blob[:2] == b"\x1f\x8b" and hashlib.sha256(blob).hexdigest() == spec["checksum"]
    assert spec["contentLength"] == len(blob)
    document = json.loads(gzip.decompress(blob))
    assert document["spec"]["_meta"] == {"version": 5}
    assert document["spec"]["nodes"][0]["hash"] == hdf5
    assert document["binary_cache_checksum"]["hash"] == tarball["checksum"]
    assert json.loads((tmp_path / "v3/layout.json").read_text()) == {"signing": "gpg"}


def test_v3_signed_manifests(tmp_path: Path) -> None:
    index, nodes = db8_sample()
    mirror = mb.write_v3_mirror(
        index, tmp_path, views={"e4s": [nodes["zlib"]["hash"]]}, signed=True
    )
    manifests = [
        mirror.index_manifest,
        *mirror.view_manifests.values(),
        *mirror.spec_manifests.values(),
    ]
    for path in manifests:
        text = path.read_text()
        assert text.startswith("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\n")
        assert text.rstrip().endswith("-----END PGP SIGNATURE-----")
        assert mb.read_manifest(path)["version"] == 3
    assert mb.verify_v3_mirror(tmp_path) == []


def test_v3_several_db_media_types(tmp_path: Path) -> None:
    index, _ = db8_sample()
    mirror = mb.write_v3_mirror(index, tmp_path / "a", db_media_versions=(7, 8, 99))
    entries = mb.read_manifest(mirror.index_manifest)["data"]
    assert [e["mediaType"] for e in entries] == [
        "application/vnd.spack.db.v7+json",
        "application/vnd.spack.db.v8+json",
        "application/vnd.spack.db.v99+json",
    ]
    blobs = [mb.blob_path(tmp_path / "a", e["checksum"]).read_bytes() for e in entries]
    assert blobs[1] == index == mirror.index_blob.read_bytes()
    assert [mo.load_index(b).binaries() for b in (blobs[0], blobs[2])] == [[], []], "decoys"
    assert [mo.load_index(b).db_version for b in blobs] == ["7", "8", "99"]
    assert mb.verify_v3_mirror(tmp_path / "a") == []
    only_unknown = mb.write_v3_mirror(index, tmp_path / "b", db_media_versions=(99,))
    assert only_unknown.index_blob.read_bytes() == index


def test_damage(tmp_path: Path) -> None:
    index, nodes = db8_sample()
    root = tmp_path / "m"
    mirror = mb.write_v3_mirror(index, root)
    blob = mb.corrupt_blob(root, mirror.index_manifest)
    assert blob == mirror.index_blob and len(blob.read_bytes()) == len(index)
    assert mb.verify_v3_mirror(root) == [
        f"v3/manifests/index/index.manifest.json: blob {blob.name} fails its checksum"
    ]
    spec_manifest = mirror.spec_manifests[nodes["zlib"]["hash"]]
    wrong = mb.corrupt_manifest_checksum(spec_manifest, "application/vnd.spack.spec.")
    assert any(f"missing blob {wrong}" in p for p in mb.verify_v3_mirror(root))
    mb.drop_db_media_types(mirror.index_manifest, signed=True)
    assert mirror.index_manifest.read_text().startswith("-----BEGIN PGP SIGNED MESSAGE-----")
    types = [e["mediaType"] for e in mb.read_manifest(mirror.index_manifest)["data"]]
    assert types == [mb.KEY_INDEX_MEDIA_TYPE]
    mb.truncate_file(mirror.index_manifest)
    assert any("unreadable manifest" in p for p in mb.verify_v3_mirror(root))
    short = tmp_path / "short"
    short.write_bytes(b"0123456789")
    mb.truncate_file(short, 3)
    assert short.read_bytes() == b"012"
    unknown = mb.with_db_version(index, "99")
    assert mo.load_index(unknown).db_version == "99"
    assert mo.load_index(unknown).binaries() == mo.load_index(index).binaries()
    listing = mb.write_listing(
        tmp_path / "cache_spack_io_index.json", {"develop": [("root", "http://x/")]}
    )
    assert json.loads(listing.read_text()) == {"develop": [{"label": "root", "url": "http://x/"}]}


# -- the HTTP server --------------------------------------------------------------------------


def get(
    server: MirrorHTTPServer, path: str, method: str = "GET", timeout: float = 5, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        connection.request(
            method, path, headers={k.replace("_", "-"): v for k, v in headers.items()}
        )
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_http_serves_files_with_etags(http_server: MirrorHTTPServer) -> None:
    index, _ = db8_sample()
    mb.write_v2_mirror(index, http_server.root)
    status, headers, body = get(http_server, "/build_cache/index.json")
    etag = headers["ETag"]
    assert (status, body, etag) == (200, index, f'"{hashlib.sha256(index).hexdigest()}"')
    assert headers["Content-Length"] == str(len(index))
    assert headers["Content-Type"] == "application/json"
    status, headers, body = get(http_server, "/build_cache/index.json", "HEAD")
    assert (status, body, headers["ETag"], headers["Content-Length"]) == (
        200,
        b"",
        etag,
        str(len(index)),
    )
    for tags in (etag, f"W/{etag}", f'"x", {etag}', "*"):
        status, headers, body = get(http_server, "/build_cache/index.json", If_None_Match=tags)
        assert (status, body, headers["ETag"]) == (304, b"", etag), tags
    assert get(http_server, "/build_cache/index.json", If_None_Match='"other"')[0] == 200
    (http_server.root / "build_cache/index.json").write_bytes(index + b"\n")
    status, headers, body = get(http_server, "/build_cache/index.json", If_None_Match=etag)
    assert (status, body) == (200, index + b"\n") and headers["ETag"] != etag
    log = http_server.requests("/build_cache/index.json")
    assert [(e.method, e.status) for e in log] == [
        ("GET", 200),
        ("HEAD", 200),
        ("GET", 304),
        ("GET", 304),
        ("GET", 304),
        ("GET", 304),
        ("GET", 200),
        ("GET", 200),
    ]
    assert [e.bytes_sent for e in log] == [len(index), 0, 0, 0, 0, 0, len(index), len(index) + 1]
    assert log[2].if_none_match == etag and log[0].if_none_match is None
    http_server.clear_log()
    assert http_server.log == []
    url = http_server.url_for(http_server.root / "build_cache/index.json.hash")
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.read() == hashlib.sha256(index).hexdigest().encode()


def test_http_not_found_and_outside_the_root(http_server: MirrorHTTPServer) -> None:
    (http_server.root / "a").mkdir()
    (http_server.root.parent / "secret").write_text("no")
    assert get(http_server, "/missing.json")[0] == 404
    assert get(http_server, "/a")[0] == 404, "a folder is no file"
    assert get(http_server, "/../secret")[0] == 404
    assert get(http_server, "/a/%2e%2e/%2e%2e/secret")[0] == 404


def test_http_injected_failures(http_server: MirrorHTTPServer) -> None:
    (http_server.root / "v3/x").mkdir(parents=True)
    (http_server.root / "v3/x/f.json").write_text("{}")
    (http_server.root / "blobs").mkdir()
    (http_server.root / "blobs/b").write_bytes(b"blob")
    http_server.not_found("/v3/")
    http_server.server_error("v3/x/")  # longer prefix wins
    assert get(http_server, "/v3/x/f.json")[0] == 500
    http_server.server_error("/blobs/", times=2)
    statuses = [get(http_server, "/blobs/b")[0] for _ in range(4)]
    assert statuses == [500, 500, 200, 200]
    http_server.clear_failures()
    assert get(http_server, "/v3/x/f.json")[0] == 200
    http_server.not_found("/v3")
    assert get(http_server, "/v3/x/f.json", "HEAD")[0] == 404
    assert [e.status for e in http_server.requests("/v3")] == [500, 200, 404]


def test_http_stalled_body_and_a_clean_close(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 100_000)
    server = MirrorHTTPServer(tmp_path).start()
    try:
        assert server._server is not None and server._server.server_address[0] == "127.0.0.1"
        server.stall("/big", after_bytes=1000)
        started = time.monotonic()
        with (
            pytest.raises(TimeoutError),
            urllib.request.urlopen(server.url + "/big", timeout=1) as response,
        ):
            assert response.status == 200
            response.read()
        assert time.monotonic() - started < 4
        assert server.requests("/big")[0].bytes_sent == 1000
        # A stalled client still connected, and an idle keep-alive one, at close.
        stalled = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        stalled.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        while b"\r\n\r\n" not in received or len(received.split(b"\r\n\r\n", 1)[1]) < 1000:
            chunk = stalled.recv(65536)
            assert chunk, "the server closed the stalled connection"
            received += chunk
        assert b"Content-Length: 100000" in received
        idle = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        idle.request("HEAD", "/big")
        assert idle.getresponse().status == 200
    finally:
        closing = time.monotonic()
        server.close()
    assert time.monotonic() - closing < 3
    assert server.alive_threads() == []
    assert stalled.recv(65536) == b"", "the stalled connection is closed"
    stalled.close()
    idle.close()
    assert [t for t in threading.enumerate() if t.name.startswith("mirror-http")] == []
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()


def test_http_serves_a_v3_mirror(http_server: MirrorHTTPServer) -> None:
    index, _ = db8_sample()
    mirror = mb.write_v3_mirror(index, http_server.root, signed=True)
    status, headers, body = get(http_server, "/v3/manifests/index/index.manifest.json")
    assert status == 200
    (entry,) = json.loads(mo.clearsigned_payload(body.decode()))["data"]
    blob_url = f"/blobs/sha256/{entry['checksum'][:2]}/{entry['checksum']}"
    blob = get(http_server, blob_url)[2]
    assert hashlib.sha256(blob).hexdigest() == entry["checksum"] and blob == index
    manifest_etag = headers["ETag"]
    assert (
        get(http_server, "/v3/manifests/index/index.manifest.json", If_None_Match=manifest_etag)[0]
        == 304
    )
    mb.write_index_manifest(http_server.root, mb.with_db_version(index, "8") + b" ", signed=True)
    assert (
        get(http_server, "/v3/manifests/index/index.manifest.json", If_None_Match=manifest_etag)[0]
        == 200
    )
    assert http_server.url_for(mirror.index_manifest).endswith(
        "/v3/manifests/index/index.manifest.json"
    )
    with pytest.raises(urllib.error.HTTPError, match="404") as raised:
        urllib.request.urlopen(http_server.url + "/v3/nothing", timeout=5)
    raised.value.close()
