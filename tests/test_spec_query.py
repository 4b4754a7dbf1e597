"""Spack spec syntax (`query:`): a table of queries with hand-written expected matches,
a property test (a spec's `format` finds it), a fuzz test of the parser, and the CLI."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cachegql.index import build_index
from cachegql.index.spack import (
    SpecQueryError,
    SpecSyntaxError,
    UnsupportedSpecError,
    parse_spec_query,
)
from tests import oracle
from tests.conftest import CLI, FIXTURES, PAGES, GraphQLClient, serving

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [PAGES, FIXTURES / "extra"]
Spec = dict[str, Any]
Predicate = Callable[[Spec], bool]


@pytest.fixture(scope="module")
def specs() -> dict[str, dict[str, Spec]]:
    return oracle.read_specs(SOURCES)


@pytest.fixture(scope="module")
def query_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("query") / "ix"
    build_index(SOURCES, out)
    return out


@pytest.fixture(scope="module")
def client(query_index: Path) -> Iterator[GraphQLClient]:
    with serving(query_index) as gql:
        yield gql


def _name(name: str) -> Predicate:
    return lambda s: s["name"] == name


def _version(*versions: str) -> Predicate:
    return lambda s: s["versions"][0] in versions


def _atoms(*atoms: str) -> Predicate:
    return lambda s: set(atoms) <= oracle.spec_atoms(s)


def _field(key: str, value: str) -> Predicate:
    return lambda s: s[key] == value


def _compiler(*normalized: str) -> Predicate:
    return lambda s: oracle.compiler_normalized(s["compiler"]) in normalized


def _all(*predicates: Predicate) -> Predicate:
    return lambda s: all(p(s) for p in predicates)


def _hash(prefix: str) -> Predicate:
    return lambda s: s["hash"].startswith(prefix)


NUMPY = _name("py-numpy")
HDF5 = _name("hdf5")
CUDNN = _name("cudnn")
# (query, tag, expected) — expected written by hand from the fixture pages.
CASES: list[tuple[str, str, Predicate]] = [
    # names
    ("hdf5", "develop", HDF5),
    ("cudnn", "develop", CUDNN),
    ("py-torch-scatter", "develop", _name("py-torch-scatter")),
    ("no-such-package", "develop", lambda s: False),
    ("zlib", "v0.22.0", _name("zlib")),
    ("  zlib  ", "develop", _name("zlib")),
    # @version: prefix matching 1.2 and 1.2.x, not 1.20
    ("py-numpy@1.2", "develop", _all(NUMPY, _version("1.2", "1.2a"))),
    ("py-numpy@1.26", "develop", _all(NUMPY, _version("1.26", "1.26.4"))),
    ("py-numpy@1.20", "develop", _all(NUMPY, _version("1.20.0"))),
    # 2.0.0rc1 is in [2, 3): its release 2.0.0 extends 2, as in Spack
    ("py-numpy@2", "develop", _all(NUMPY, _version("2.0.0rc1", "2.0.0", "2.1.0"))),
    ("py-numpy@2.0.0", "develop", _all(NUMPY, _version("2.0.0"))),
    # exact
    ("py-numpy@=1.26", "develop", _all(NUMPY, _version("1.26"))),
    ("py-numpy@=1.2", "develop", _all(NUMPY, _version("1.2"))),
    ("py-numpy@=2.0.0rc1", "develop", _all(NUMPY, _version("2.0.0rc1"))),
    ("py-numpy@=3", "develop", lambda s: False),
    # ranges: the upper bound includes its extensions; rc before release
    (
        "py-numpy@1.2:1.26",
        "develop",
        _all(NUMPY, _version("1.2", "1.2a", "1.3-t9b_atlas", "1.20.0", "1.26", "1.26.4")),
    ),
    (
        "py-numpy@1.26:",
        "develop",
        _all(NUMPY, _version("1.26", "1.26.4", "2.0.0rc1", "2.0.0", "2.1.0", "main")),
    ),
    ("py-numpy@:1.3", "develop", _all(NUMPY, _version("1.2", "1.2a", "1.3-t9b_atlas"))),
    ("py-numpy@2.0.0:", "develop", _all(NUMPY, _version("2.0.0", "2.1.0", "main"))),
    (
        "py-numpy@:1.99",
        "develop",
        _all(NUMPY, _version("1.2", "1.2a", "1.3-t9b_atlas", "1.20.0", "1.26", "1.26.4")),
    ),
    ("py-numpy@main", "develop", _all(NUMPY, _version("main"))),
    ("py-numpy@3:", "develop", _all(NUMPY, _version("main"))),
    # lists
    ("py-numpy@1.2,2.1", "develop", _all(NUMPY, _version("1.2", "1.2a", "2.1.0"))),
    ("py-numpy@=1.26,=2.0.0", "develop", _all(NUMPY, _version("1.26", "2.0.0"))),
    ("py-numpy@:1.2,2.1:", "develop", _all(NUMPY, _version("1.2", "1.2a", "2.1.0", "main"))),
    ("py-numpy @ 1.26", "develop", _all(NUMPY, _version("1.26", "1.26.4"))),
    # versions with dashes (Spack order: 8.9.7.29-12 > 8.9.7.29-11)
    ("cudnn@8.9.7.29", "develop", _all(CUDNN, _version("8.9.7.29-11", "8.9.7.29-12"))),
    ("cudnn@=8.9.7.29-12", "develop", _all(CUDNN, _version("8.9.7.29-12"))),
    ("cudnn@8.9.7.29-12:", "develop", _all(CUDNN, _version("8.9.7.29-12", "9.8.0.87-12"))),
    ("cudnn@:8.9.7.29-11", "develop", _all(CUDNN, _version("8.9.5.30-12", "8.9.7.29-11"))),
    ("cudnn@9", "develop", _all(CUDNN, _version("9.8.0.87-12"))),
    ("hdf5@develop", "develop", _all(HDF5, _version("develop"))),
    ("hdf5@1.14", "develop", _all(HDF5, _version("1.14.3", "1.14.5"))),
    ("@1.3.1", "develop", _version("1.3.1")),
    # compilers
    ("%gcc", "develop", lambda s: s["compiler"].startswith("gcc@")),
    ("hdf5%gcc", "develop", _all(HDF5, lambda s: s["compiler"].startswith("gcc@"))),
    ("hdf5 %gcc@13", "develop", _all(HDF5, _compiler("gcc@13.2.0"))),
    ("hdf5 %gcc@11:12", "develop", _all(HDF5, _compiler("gcc@11.4.0"))),
    ("py-numpy %gcc@:12", "develop", _all(NUMPY, _compiler("gcc@9.4.0", "gcc@12.3.0"))),
    ("%gcc@=11.4.0", "develop", _compiler("gcc@11.4.0")),
    (
        "py-torch-scatter %apple-clang@15",
        "develop",
        _all(_name("py-torch-scatter"), _compiler("apple-clang@15.0.0")),
    ),
    ("%none", "develop", _field("compiler", "none")),
    ("cudnn %none", "develop", CUDNN),
    ("%none@1", "develop", lambda s: False),
    ("%msvc", "v0.22.0", _compiler("msvc@19.40.33811")),
    # variants
    ("hdf5 +mpi", "develop", _all(HDF5, _atoms("mpi=true"))),
    ("hdf5+mpi", "develop", _all(HDF5, _atoms("mpi=true"))),
    ("hdf5~mpi", "develop", _all(HDF5, _atoms("mpi=false"))),
    ("hdf5 -mpi", "develop", _all(HDF5, _atoms("mpi=false"))),
    ("hdf5 mpi=true", "develop", _all(HDF5, _atoms("mpi=true"))),
    ("hdf5 +mpi ~shared", "develop", _all(HDF5, _atoms("mpi=true", "shared=false"))),
    ("hdf5 +cuda cuda_arch=80", "develop", _all(HDF5, _atoms("cuda=true", "cuda_arch=80"))),
    ("cuda_arch=70,80", "develop", _atoms("cuda_arch=70", "cuda_arch=80")),
    ("cuda_arch=80", "develop", _atoms("cuda_arch=80")),
    ("py-numpy cuda_arch=90", "develop", _all(NUMPY, _atoms("cuda_arch=90"))),
    ("py-numpy cuda_arch=80,90", "develop", _all(NUMPY, _atoms("cuda_arch=80", "cuda_arch=90"))),
    ("amdgpu_target:=gfx90a", "develop", _atoms("amdgpu_target=gfx90a")),
    ("amdgpu_target=gfx90a", "develop", _atoms("amdgpu_target=gfx90a")),
    ("hdf5 libs=shared", "develop", _all(HDF5, _atoms("libs=shared"))),
    (
        "languages='c,c++,fortran'",
        "develop",
        _atoms("languages=c", "languages=c++", "languages=fortran"),
    ),
    ('languages="c,fortran"', "develop", _atoms("languages=c", "languages=fortran")),
    ("build_system==cmake", "develop", _atoms("build_system=cmake")),
    ("patches:=f42732a", "develop", _atoms("patches=f42732a")),
    (
        "hdf5 build_type=Release +shared",
        "develop",
        _all(HDF5, _atoms("build_type=Release", "shared=true")),
    ),
    ("zlib ~shared", "v0.22.0", _all(_name("zlib"), _atoms("shared=false"))),
    ("hdf5 +nosuchvariant", "develop", lambda s: False),
    # os, platform, target, arch
    ("hdf5 target=aarch64", "develop", _all(HDF5, _field("target", "aarch64"))),
    ("os=sequoia", "develop", _field("os", "sequoia")),
    ("operating_system=ubuntu22.04", "develop", _field("os", "ubuntu22.04")),
    ("platform=darwin", "develop", _field("platform", "darwin")),
    ("platform=windows", "v0.22.0", _field("platform", "windows")),
    (
        "arch=linux-ubuntu24.04-aarch64",
        "develop",
        _all(_field("platform", "linux"), _field("os", "ubuntu24.04"), _field("target", "aarch64")),
    ),
    ("arch=neoverse_v2", "develop", _field("target", "neoverse_v2")),
    ("cudnn arch=linux-ubuntu22.04-x86_64_v3", "develop", _all(CUDNN, _field("os", "ubuntu22.04"))),
    ("target=x86_64", "develop", lambda s: False),
    # hashes
    ("/22xi", "develop", _hash("22xi")),
    ("/22xi2", "develop", _hash("22xi2")),
    ("/22XI3", "develop", _hash("22xi3")),
    ("hdf5/22xi", "develop", _all(HDF5, _hash("22xi"))),
    ("cudnn /22xi", "develop", _all(CUDNN, _hash("22xi"))),
    # everything at once
    (
        "hdf5@1.14: +mpi %gcc@13 target=x86_64_v3",
        "develop",
        _all(
            HDF5,
            _version("1.14.3", "1.14.5", "develop"),
            _atoms("mpi=true"),
            _compiler("gcc@13.2.0"),
            _field("target", "x86_64_v3"),
        ),
    ),
    (
        "py-numpy@2: +blas %gcc os=ubuntu22.04 platform=linux",
        "develop",
        _all(
            NUMPY,
            _version("2.0.0rc1", "2.0.0", "2.1.0", "main"),
            _atoms("blas=true"),
            lambda s: s["compiler"].startswith("gcc@"),
        ),
    ),
]


def _expected(specs: dict[str, dict[str, Spec]], tag: str, predicate: Predicate) -> list[str]:
    return oracle.default_order(s for s in specs[tag].values() if predicate(s))


def _query_hashes(client: GraphQLClient, query: str, tag: str) -> list[str]:
    data = client.data(
        """query($q: String!, $tag: String) { specs(query: $q, tag: $tag, first: 100) {
             totalCount nodes { hash } } }""",
        q=query,
        tag=tag,
    )["specs"]
    assert data["totalCount"] == len(data["nodes"])
    return [n["hash"] for n in data["nodes"]]


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(("query", "tag", "predicate"), CASES, ids=[c[0] for c in CASES])
def test_query_matches(
    client: GraphQLClient,
    specs: dict[str, dict[str, Spec]],
    query: str,
    tag: str,
    predicate: Predicate,
) -> None:
    assert _query_hashes(client, query, tag) == _expected(specs, tag, predicate)


def test_query_combines_with_filter_and_search(
    client: GraphQLClient, specs: dict[str, dict[str, Spec]]
) -> None:
    data = client.data(
        """{ specs(query: "hdf5 +mpi", filter: { os: { eq: "ubuntu22.04" } }, search: "hdf5") {
             totalCount nodes { hash } } }"""
    )["specs"]
    expected = _expected(
        specs, "develop", _all(HDF5, _atoms("mpi=true"), _field("os", "ubuntu22.04"))
    )
    assert sorted(n["hash"] for n in data["nodes"]) == sorted(expected)


def test_query_on_package_and_stack_specs(
    client: GraphQLClient, specs: dict[str, dict[str, Spec]]
) -> None:
    data = client.data(
        """{ package(name: "hdf5") { specs(query: "@1.14 %gcc@13") { totalCount } }
             stack(name: "e4s") { specs(query: "hdf5 +mpi") { totalCount } } }"""
    )
    assert data["package"]["specs"]["totalCount"] == len(
        _expected(
            specs, "develop", _all(HDF5, _version("1.14.3", "1.14.5"), _compiler("gcc@13.2.0"))
        )
    )
    assert data["stack"]["specs"]["totalCount"] == len(
        _expected(specs, "develop", _all(HDF5, _atoms("mpi=true"), lambda s: "e4s" in s["stacks"]))
    )


@pytest.mark.parametrize(
    ("query", "column", "needle"),
    [
        ("hdf5@@1.2", 6, "expected a version"),
        ("hdf5 +", 7, "expected a variant name"),
        ("hdf5 zlib", 6, "one spec per query"),
        ("hdf5 !x", 6, "expected a package name, @version"),
        ("hdf5 languages='c,c++", 16, "closing '"),
        ("hdf5@2:1", 5, "empty range"),
        ("%", 2, "compiler name"),
        ("hdf5 os=", 9, "a value after 'os='"),
        ("/22xi1", 1, "not a hash character"),
        ("hdf5 target=x86_64 target=aarch64", 20, "one target per spec"),
    ],
)
def test_syntax_errors_say_where_and_what(
    client: GraphQLClient, query: str, column: int, needle: str
) -> None:
    error = client.error("query($q: String!) { specs(query: $q) { totalCount } }", q=query)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert f"column {column}:" in error["message"]
    assert needle in error["message"]
    assert query.strip()[:4] in error["message"]  # the text around the error is shown


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("hdf5 target=zen9:", "unknown microarchitecture 'zen9'; did you mean"),
        ("hdf5 %c,cxx=gcc@13", "per-language compilers"),
        ("hdf5 %%gcc", "propagated compiler"),
        ("hdf5 ^^zlib", "'^name' already matches at any depth"),
    ],
)
def test_what_the_index_cannot_answer_is_refused(
    client: GraphQLClient, query: str, needle: str
) -> None:
    error = client.error("query($q: String!) { specs(query: $q) { totalCount } }", q=query)
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert needle in error["message"]
    with pytest.raises(UnsupportedSpecError):
        parse_spec_query(query)


@pytest.mark.parametrize("query", ["hdf5 ^mpich", "hdf5 ^zlib@1.3 +shared", "^zlib"])
def test_dependencies_on_a_tag_of_pages_are_refused_naming_the_tag(
    client: GraphQLClient, query: str
) -> None:
    """Pages list no dependencies: `^` is parsed, and the index says why it cannot answer."""
    assert parse_spec_query(query).dependencies
    error = client.error(
        'query($q: String!) { specs(query: $q, tag: "v0.22.0") { totalCount } }', q=query
    )
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "in tag 'v0.22.0'" in error["message"] and "no dependencies" in error["message"]
    assert error["extensions"]["column"] == query.index("^") + 1  # the dependency's column


@pytest.mark.parametrize("query", ["hdf5 cflags=-O3", 'zlib cflags="-O2 -g"', "namespace=builtin"])
def test_flags_and_namespaces_match_nothing_on_pages(client: GraphQLClient, query: str) -> None:
    """Pages record neither: no spec of theirs has flags or a namespace to match."""
    data = client.data("query($q: String!) { specs(query: $q) { totalCount } }", q=query)
    assert data["specs"]["totalCount"] == 0


def test_every_spec_is_found_by_its_format(
    client: GraphQLClient, specs: dict[str, dict[str, Spec]]
) -> None:
    for tag, tag_specs in specs.items():
        for digest in tag_specs:
            data = client.data(
                "query($h: String!, $t: String) { spec(hash: $h, tag: $t) { format } }",
                h=digest,
                t=tag,
            )
            assert digest in _query_hashes(client, data["spec"]["format"], tag)


def test_format_looks_like_spack(client: GraphQLClient) -> None:
    data = client.data(
        '{ specs(query: "cudnn@=8.9.7.29-12 target=aarch64") { nodes { format hash } } }'
    )
    node = data["specs"]["nodes"][0]
    assert node["format"] == (
        "cudnn@8.9.7.29-12 build_system=generic arch=linux-ubuntu24.04-aarch64 %none "
        f"/{node['hash'][:7]}"
    )


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from cachegql.demo import DemoConfig, write_pages

    root = tmp_path_factory.mktemp("demo")
    write_pages(DemoConfig(packages=60, specs=1500, seed=3), root / "pages")
    build_index([root / "pages"], root / "ix", strict=True)
    return root / "ix"


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_property_format_finds_the_spec(demo_index: Path, data: st.DataObject) -> None:
    """For any spec of the demo data, querying with its `format` string returns it."""
    from cachegql.index import find_specs, format_spec

    store = _store(demo_index)
    tag = data.draw(st.sampled_from(store.tags))
    snapshot = store.snapshot(tag)
    row = data.draw(st.integers(0, snapshot.num_specs - 1))
    spec = snapshot.specs([row])[0]
    assert row in find_specs(snapshot, query=format_spec(spec)).tolist()
    # and without the hash, it is still among the matches
    assert row in find_specs(snapshot, query=format_spec(spec, with_hash=False)).tolist()


_STORES: dict[Path, Any] = {}


def _store(path: Path) -> Any:
    from cachegql.index import IndexStore

    if path not in _STORES:
        _STORES[path] = IndexStore(path)
    return _STORES[path]


SPEC_ALPHABET = st.sampled_from(list("abchdf5@%+~-=:,/^ '\"._0123456789xyzXYZ!*\t\n"))


@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.text(SPEC_ALPHABET, max_size=40), st.text(max_size=40)))
def test_fuzz_parser_raises_only_its_own_errors(text: str) -> None:
    try:
        parsed = parse_spec_query(text)
    except SpecQueryError as exc:
        if isinstance(exc, SpecSyntaxError):
            assert 0 <= exc.position <= len(text)
        assert str(exc)
    else:
        assert parsed.text == text


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(SPEC_ALPHABET, max_size=30))
def test_fuzz_queries_never_fail_inside(demo_index: Path, text: str) -> None:
    """Whatever parses also evaluates: no error other than the parser's own."""
    from cachegql.index import find_specs

    store = _store(demo_index)
    with contextlib.suppress(SpecQueryError):
        find_specs(store.snapshot(), query=text)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "query", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_cli_prints_short_hash_then_spec(
    query_index: Path, specs: dict[str, dict[str, Spec]]
) -> None:
    result = _cli("hdf5 +mpi target=aarch64", "--index", str(query_index))
    assert result.returncode == 0, result.stderr
    expected = _expected(
        specs, "develop", _all(HDF5, _atoms("mpi=true"), _field("target", "aarch64"))
    )
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [h[:7] for h in expected]
    assert all(line.split()[1].startswith("hdf5@") and "arch=linux-" in line for line in lines)
    assert f"==> {len(expected)} matching specs in develop" in result.stderr


def test_cli_json_and_tag(query_index: Path, specs: dict[str, dict[str, Spec]]) -> None:
    result = _cli("zlib", "--index", str(query_index), "--tag", "v0.22.0", "--json")
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["count"] == 2 and body["tag"] == "v0.22.0"
    assert [s["hash"] for s in body["specs"]] == _expected(specs, "v0.22.0", _name("zlib"))
    assert {
        "hash",
        "name",
        "version",
        "compiler",
        "os",
        "platform",
        "target",
        "variants",
        "stacks",
        "format",
    } <= set(body["specs"][0])


def test_cli_errors_are_clear(query_index: Path) -> None:
    result = _cli("hdf5 ^mpich", "--index", str(query_index))
    assert result.returncode == 1
    assert result.stderr.startswith("error: dependency constraints")
    assert "Traceback" not in result.stderr
