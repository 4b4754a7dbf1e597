"""The synthetic Spack build cache (`cachegql.demo.mirrors`), read back with plain json/hashlib."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import statistics
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cachegql.demo import STACK_NAMES, MirrorConfig, MirrorSummary, write_mirror
from cachegql.demo.generator import _STACKS
from cachegql.demo.mirrors import _BINARY, _Builder
from tests.conftest import CLI

Record = dict[str, Any]
Index = dict[str, Record]

CONFIG = MirrorConfig(specs=400, packages=100, stacks=4, seed=3, dangling=4)
HASH = re.compile(r"^[a-z2-7]{32}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
RECORD_KEYS = ["contentLength", "mediaType", "compression", "checksumAlgorithm", "checksum"]
DB = "application/vnd.spack.db.v8+json"
SPEC = "application/vnd.spack.spec.v5+json"
TARBALL = "application/vnd.spack.install.v2.tar+gzip"
FLAGS = ("cflags", "cppflags", "cxxflags", "fflags", "ldflags", "ldlibs")
LANGUAGES = {"c", "cxx", "fortran"}


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _blob(mirror: Path, record: Record) -> Path:
    algorithm: str = record["checksumAlgorithm"]
    checksum: str = record["checksum"]
    return mirror / "blobs" / algorithm / checksum[:2] / checksum


def _index_manifest(summary: MirrorSummary, label: str) -> Path:
    folder = summary.mirror / "v3" / "manifests" / "index"
    return (folder if label == "root" else folder / label) / "index.manifest.json"


def _installs(data: bytes) -> Index:
    database = json.loads(data)["database"]
    assert database["version"] == "8"
    installs: Index = database["installs"]
    return installs


def _deps(record: Record) -> list[Record]:
    deps: list[Record] = record["spec"].get("dependencies", [])
    return deps


def _binaries(index: Index) -> set[str]:
    return {h for h, r in index.items() if r["in_buildcache"]}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, MirrorSummary]:
    out = tmp_path_factory.mktemp("mirror")
    return out, write_mirror(CONFIG, out)


@pytest.fixture(scope="module")
def indexes(written: tuple[Path, MirrorSummary]) -> dict[str, Index]:
    """label -> index, read through the v3 index manifests (root and views)."""
    _, summary = written
    out = {}
    for label, _ in summary.stacks:
        (record,) = _json(_index_manifest(summary, label))["data"]
        out[label] = _installs(_blob(summary.mirror, record).read_bytes())
    return out


@pytest.fixture(scope="module")
def root(indexes: dict[str, Index]) -> Index:
    return indexes["root"]


def test_the_same_config_writes_the_same_bytes(tmp_path: Path) -> None:
    config = MirrorConfig(specs=150, packages=15, stacks=3, seed=7, dangling=2)
    write_mirror(config, tmp_path / "a")
    write_mirror(config, tmp_path / "b")
    write_mirror(MirrorConfig(specs=150, packages=15, stacks=3, seed=8, dangling=2), tmp_path / "c")
    first = _tree(tmp_path / "a")
    assert first and first == _tree(tmp_path / "b")
    assert first != _tree(tmp_path / "c")


def test_the_summary_counts_what_was_written(
    written: tuple[Path, MirrorSummary], indexes: dict[str, Index], root: Index
) -> None:
    out, summary = written
    assert summary.tag == CONFIG.tag and summary.spec_blobs
    assert summary.specs == CONFIG.specs == len(_binaries(root))
    assert summary.nodes == len(root) > summary.specs
    assert summary.edges == sum(len(_deps(r)) for r in root.values())
    assert summary.dangling == CONFIG.dangling
    assert summary.packages == len({root[h]["spec"]["name"] for h in _binaries(root)})
    assert [label for label, _ in summary.stacks] == ["root", *STACK_NAMES[: CONFIG.stacks]]
    assert dict(summary.stacks) == {label: len(_binaries(i)) for label, i in indexes.items()}
    assert summary.listing == out / "cache_spack_io_index.json"


def test_index_manifests_point_to_their_blobs(written: tuple[Path, MirrorSummary]) -> None:
    _, summary = written
    manifests = sorted((summary.mirror / "v3" / "manifests" / "index").rglob("*.json"))
    assert len(manifests) == 1 + CONFIG.stacks
    for path in manifests:
        manifest = _json(path)
        assert manifest["version"] == 3
        (record,) = manifest["data"]
        assert list(record) == RECORD_KEYS
        assert (record["mediaType"], record["compression"]) == (DB, "none")
        assert record["checksumAlgorithm"] == "sha256"
        data = _blob(summary.mirror, record).read_bytes()
        assert hashlib.sha256(data).hexdigest() == record["checksum"]
        assert len(data) == record["contentLength"]
    assert _json(summary.mirror / "v3" / "layout.json") == {"signing": "gpg"}


def test_manifests_are_written_as_spack_writes_them(written: tuple[Path, MirrorSummary]) -> None:
    """`json.dump(manifest, indent=0, separators=(",", ":"))`, as url_buildcache.py does."""
    _, summary = written
    for path in (summary.mirror / "v3" / "manifests").rglob("*.manifest.json"):
        text = path.read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), indent=0, separators=(",", ":")), path


def test_every_binary_has_a_spec_manifest_with_its_tarball_and_spec_file(
    written: tuple[Path, MirrorSummary], root: Index
) -> None:
    _, summary = written
    folder = summary.mirror / "v3" / "manifests" / "spec"
    assert len(list(folder.rglob("*.spec.manifest.json"))) == summary.specs
    sizes = []
    for spec_hash in sorted(_binaries(root)):
        node = root[spec_hash]["spec"]
        name = f"{node['name']}-{node['version']}-{spec_hash}.spec.manifest.json"
        manifest = _json(folder / node["name"] / name)
        assert manifest["version"] == 3
        # Spack pushes the tarball's record first; readers pick records by media type.
        assert [r["mediaType"] for r in manifest["data"]] == [TARBALL, SPEC]
        by_type = {r["mediaType"]: r for r in manifest["data"]}
        assert all(list(r) == RECORD_KEYS and r["compression"] == "gzip" for r in by_type.values())
        tarball = by_type[TARBALL]
        assert SHA256.match(tarball["checksum"]) and not _blob(summary.mirror, tarball).exists()
        sizes.append(tarball["contentLength"])
        data = _blob(summary.mirror, by_type[SPEC]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == by_type[SPEC]["checksum"]
        assert len(data) == by_type[SPEC]["contentLength"] and data[:2] == b"\x1f\x8b"
        document = json.loads(gzip.decompress(data))
        assert document["buildcache_layout_version"] == 2
        assert document["spec"]["_meta"] == {"version": 5}
        nodes = document["spec"]["nodes"]
        assert nodes[0] == node
        # The spec file holds the DAG: every node reachable, each once, as in the index.
        assert len({n["hash"] for n in nodes}) == len(nodes)
        assert all(root[n["hash"]]["spec"] == n for n in nodes)
        in_file = {n["hash"] for n in nodes}
        assert all(
            d["hash"] in in_file or d["hash"] not in root
            for n in nodes
            for d in n.get("dependencies", [])
        )
    assert all(isinstance(s, int) for s in sizes)
    # Skewed, from kilobytes to gigabytes, some above what a signed 32-bit int holds.
    assert min(sizes) < 100_000 and max(sizes) > 2**31 and max(sizes) < 10**10
    assert statistics.median(sizes) < statistics.mean(sizes) / 2


def test_no_spec_manifest_for_nodes_outside_the_cache(
    written: tuple[Path, MirrorSummary], root: Index
) -> None:
    _, summary = written
    folder = summary.mirror / "v3" / "manifests" / "spec"
    named = {
        p.name.removesuffix(".spec.manifest.json").rsplit("-", 1)[1] for p in folder.rglob("*.json")
    }
    assert named == _binaries(root)


def test_views_list_exactly_the_binaries_of_their_stack(indexes: dict[str, Index]) -> None:
    root = indexes["root"]
    archs = {s.name: {(s.platform, os, target) for os, target in s.archs} for s in _STACKS}
    for label, index in indexes.items():
        if label == "root":
            continue
        assert _binaries(index) <= _binaries(root)
        for spec_hash in _binaries(index):
            arch = index[spec_hash]["spec"]["arch"]
            target = arch["target"] if isinstance(arch["target"], str) else arch["target"]["name"]
            assert (arch["platform"], arch["platform_os"], target) in archs[label]
        # A view holds its binaries' DAGs: the other nodes are there, not in its cache.
        assert all(
            index[h] == {**root[h], "in_buildcache": False} for h in set(index) - _binaries(index)
        )
        assert all(index[h] == root[h] for h in _binaries(index))
    labels = Counter(h for label, i in indexes.items() if label != "root" for h in _binaries(i))
    assert set(labels) == _binaries(root), "every binary is in root and in a stack"
    assert max(labels.values()) > 1, "some binaries are in two stacks"


def test_views_agree_with_the_generated_stacks(indexes: dict[str, Index]) -> None:
    graph = _Builder(CONFIG).build()
    labels = ["root", *STACK_NAMES[: CONFIG.stacks]]
    expected: dict[str, set[str]] = {label: set() for label in labels}
    for node in range(len(graph)):
        if graph.flags[node] & _BINARY:
            expected["root"].add(graph.hash(node))
            for bit, label in enumerate(labels[1:]):
                if graph.stacks[node] >> bit & 1:
                    expected[label].add(graph.hash(node))
    assert {label: _binaries(i) for label, i in indexes.items()} == expected


def test_the_v2_mirrors_hold_the_same_indexes(written: tuple[Path, MirrorSummary]) -> None:
    out, summary = written
    for label, binaries in summary.stacks:
        v2 = out / "stacks" / label / "build_cache"
        data = (v2 / "index.json").read_bytes()
        assert (v2 / "index.json.hash").read_text() == hashlib.sha256(data).hexdigest()
        manifest = _json(_index_manifest(summary, label))
        assert data == _blob(summary.mirror, manifest["data"][0]).read_bytes()
        assert len(_binaries(_installs(data))) == binaries


def test_the_listing_names_every_index(written: tuple[Path, MirrorSummary]) -> None:
    out, summary = written
    listing = _json(summary.listing)
    assert list(listing) == [CONFIG.tag]
    entries = listing[CONFIG.tag]
    assert [e["label"] for e in entries] == [label for label, _ in summary.stacks]
    for entry in entries:
        assert sorted(entry) == ["label", "url"]
        index = summary.listing.parent / entry["url"]
        assert index.is_file() and index.name == "index.json"
        assert index.parent.parent == out / "stacks" / entry["label"]


def test_dependencies_resolve_within_each_index_except_the_dangling_ones(
    indexes: dict[str, Index],
) -> None:
    root = indexes["root"]
    missing = [d["hash"] for r in root.values() for d in _deps(r) if d["hash"] not in root]
    assert len(missing) == len(set(missing)) == CONFIG.dangling
    assert all(HASH.match(h) for h in missing)
    assert all(
        root[h]["in_buildcache"] for h, r in root.items() for d in _deps(r) if d["hash"] in missing
    )
    for index in indexes.values():
        assert {
            d["hash"] for r in index.values() for d in _deps(r) if d["hash"] not in index
        } <= set(missing)


def test_the_dag_has_no_cycle(root: Index) -> None:
    state: dict[str, int] = {}
    for start in root:
        stack = [(start, iter(_deps(root[start])))]
        state[start] = state.get(start, 0) or 1
        if state[start] == 2:
            continue
        while stack:
            node, deps = stack[-1]
            dep = next(deps, None)
            if dep is None:
                state[node] = 2
                stack.pop()
            elif dep["hash"] in root:
                seen = state.get(dep["hash"], 0)
                assert seen != 1, f"cycle through {dep['name']}"
                if seen == 0:
                    state[dep["hash"]] = 1
                    stack.append((dep["hash"], iter(_deps(root[dep["hash"]]))))
    assert set(state) == set(root) and set(state.values()) == {2}


def test_dependencies_are_skewed_and_shared(root: Index) -> None:
    binaries = _binaries(root)
    counts = [len(_deps(root[h])) for h in binaries]
    assert 8 <= statistics.mean(counts) <= 12, statistics.mean(counts)
    assert min(counts) == 0 and max(counts) >= 25
    fan_in = Counter({root[h]["spec"]["name"]: 0 for h in binaries})
    for record in root.values():
        fan_in.update(root[d["hash"]]["spec"]["name"] for d in _deps(record) if d["hash"] in root)
    widely = {name for name, n in fan_in.items() if n > len(binaries) / 10}
    assert {"compiler-wrapper", "gcc", "gcc-runtime", "zlib"} <= widely
    assert statistics.median(fan_in.values()) < len(binaries) / 20, "most packages by few"
    nodes = Counter(d["hash"] for r in root.values() for d in _deps(r))
    assert nodes.most_common(1)[0][1] > len(binaries) / 10, "nodes are shared, not only packages"
    for record in root.values():
        names = [d["name"] for d in _deps(record)]
        assert names == sorted(set(names)), "sorted by name, one edge per name"
        assert all(sorted(d["parameters"]) == ["deptypes", "virtuals"] for d in _deps(record))


def test_compilers_are_build_dependencies_with_language_virtuals(root: Index) -> None:
    binaries = _binaries(root)
    compiled = 0
    for spec_hash in binaries:
        edges = [d for d in _deps(root[spec_hash]) if set(d["parameters"]["virtuals"]) & LANGUAGES]
        if edges:
            compiled += 1
            (edge,) = edges
            assert edge["parameters"]["deptypes"] == ["build"]
            virtuals = edge["parameters"]["virtuals"]
            assert set(virtuals) <= LANGUAGES and virtuals == sorted(virtuals)
            compiler = root[edge["hash"]]
            assert not compiler["in_buildcache"] and compiler["spec"]["external"]["module"] is None
            assert isinstance(compiler["spec"]["arch"]["target"], str)
            assert "compiler" not in root[spec_hash]["spec"]["annotations"]
    assert compiled > 0.75 * len(binaries)
    names = {
        root[d["hash"]]["spec"]["name"]
        for h in binaries
        for d in _deps(root[h])
        if d["parameters"]["virtuals"] and set(d["parameters"]["virtuals"]) <= LANGUAGES
    }
    assert "gcc" in names and len(names) >= 2


def test_some_nodes_were_migrated_from_older_formats(root: Index) -> None:
    migrated = [r["spec"] for r in root.values() if "compiler" in r["spec"]["annotations"]]
    assert migrated
    for node in migrated:
        assert node["annotations"]["original_specfile_version"] == 4
        assert re.match(r"^[a-z-]+@=[\d.]+$", node["annotations"]["compiler"])
        assert not any(
            set(d["parameters"]["virtuals"]) & LANGUAGES for d in node.get("dependencies", [])
        )
    others = [
        r["spec"]["annotations"]
        for r in root.values()
        if "compiler" not in r["spec"]["annotations"]
    ]
    assert all(a == {"original_specfile_version": 5} for a in others)


def test_some_nodes_are_not_in_the_cache(root: Index) -> None:
    outside = [r for r in root.values() if not r["in_buildcache"]]
    externals = [r for r in outside if "external" in r["spec"]]
    assert externals and len(externals) < len(outside), "externals and nodes not pushed"
    assert all(r["spec"]["external"]["path"] for r in externals)
    referenced = Counter(d["hash"] for r in root.values() for d in _deps(r))
    assert all(r["ref_count"] == referenced[h] for h, r in root.items())


def test_nodes_look_like_spack_1x_nodes(root: Index) -> None:
    assert all(HASH.match(h) and r["spec"]["hash"] == h for h, r in root.items())
    nodes = [r["spec"] for r in root.values()]
    keys = [
        "name",
        "version",
        "arch",
        "namespace",
        "parameters",
        "package_hash",
        "annotations",
        "hash",
    ]
    assert all([k for k in node if k not in ("external", "dependencies")] == keys for node in nodes)
    targets = [n["arch"]["target"] for n in nodes]
    assert any(isinstance(t, str) for t in targets)
    detailed = [t for t in targets if isinstance(t, dict)]
    assert detailed and all(
        sorted(t) == ["cpupart", "features", "generation", "name", "parents", "vendor"]
        for t in detailed
    )
    assert {n["arch"]["platform"] for n in nodes} >= {"linux", "darwin"}
    assert {n["namespace"] for n in nodes} >= {"builtin", "mysite"}
    assert all(re.match(r"^[a-z2-7]{52}====$", n["package_hash"]) for n in nodes)
    parameters = [n["parameters"] for n in nodes]
    assert all(list(p)[-6:] == list(FLAGS) for p in parameters)
    assert any(p[f] for p in parameters for f in FLAGS)
    assert sum(1 for p in parameters if any(p[f] for f in FLAGS)) < len(parameters) / 10
    values = [v for p in parameters for k, v in p.items() if k not in FLAGS]
    assert {type(v) for v in values} == {bool, str, list}
    patches = [v for p in parameters for v in p.get("patches", [])]
    assert patches and all(SHA256.match(v) for v in patches)


def test_spec_blobs_and_dangling_edges_can_be_left_out(tmp_path: Path) -> None:
    config = MirrorConfig(specs=120, packages=12, stacks=2, spec_blobs=False, dangling=0)
    summary = write_mirror(config, tmp_path)
    manifests = list((summary.mirror / "v3" / "manifests" / "spec").rglob("*.json"))
    assert len(manifests) == summary.specs and not summary.spec_blobs
    for path in manifests:
        for record in _json(path)["data"]:
            assert not _blob(summary.mirror, record).exists()
    blobs = [p for p in (summary.mirror / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == 1 + 2, "the indexes only"
    root = _installs((tmp_path / "stacks" / "root" / "build_cache" / "index.json").read_bytes())
    assert all(d["hash"] in root for r in root.values() for d in _deps(r))


@pytest.mark.parametrize(
    "config",
    [
        MirrorConfig(packages=0),
        MirrorConfig(stacks=0),
        MirrorConfig(stacks=len(STACK_NAMES) + 1),
        MirrorConfig(dangling=-1),
        MirrorConfig(tag=" develop"),
        MirrorConfig(specs=20, packages=20),
    ],
)
def test_a_config_that_cannot_be_written_is_refused(tmp_path: Path, config: MirrorConfig) -> None:
    with pytest.raises(ValueError):
        write_mirror(config, tmp_path)
    assert not any(tmp_path.iterdir())


def test_an_existing_mirror_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "mirror").mkdir()
    with pytest.raises(FileExistsError):
        write_mirror(MirrorConfig(specs=100, packages=10, stacks=2), tmp_path)


def test_demo_mirror_writes_an_environment_that_check_reads(tmp_path: Path) -> None:
    """`demo-data --mirror` pins some binaries in a spack.lock, and one changed root the
    cache lacks: `cachegql check` finds the rest and names the change as the difference."""
    out = tmp_path / "demo"
    subprocess.run(
        [CLI, "demo-data", "--mirror", "--specs", "400", "--packages", "40", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    lock = json.loads((out / "spack.lock").read_text())
    assert lock["_meta"]["lockfile-version"] == 6
    changed = lock["roots"][-1]["hash"]
    subprocess.run(
        [CLI, "index", str(out / "mirror"), "--tag", "develop", "--out", str(tmp_path / "ix")],
        check=True,
        capture_output=True,
    )
    run = subprocess.run(
        [CLI, "check", str(out / "spack.lock"), "--index", str(tmp_path / "ix"), "--json"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    missing = {spec["hash"]: spec for spec in report["specs"] if not spec["cached"]}
    assert changed in missing
    assert report["cached"] > report["total"] // 2
    nearest = missing[changed]["nearest"][0]
    assert any("you asked" in difference for difference in nearest["differences"])
