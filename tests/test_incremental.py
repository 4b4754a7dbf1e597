"""Incremental re-index (docs/indexing/incremental.md): a build given the previous one at
`--out` takes the tags whose build caches did not change from it, reads the rest, and
answers exactly as a full build of the same sources does.

Real generated build caches (three tags of `cachegql demo-data --mirror`'s generator, a
listing of their stacks), real builds on disk, the real app answering over HTTP.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index import IndexStore, StrictModeError, build_index
from cachegql.index import build as build_module
from cachegql.index.build import BuildReport, code_digest
from cachegql.index.disk.reuse import PreviousBuild
from cachegql.index.ingest import (
    SourceLimits,
    identity,
    ingest_caches,
    look_ahead,
    tarball_sizes,
)
from cachegql.index.ingest.files import read_regular_status
from cachegql.server.fetch import HttpReader
from tests import mirror_builder as mb
from tests import oracle_queries as oq
from tests.conftest import CLI, PAGES, serving
from tests.http_fixture import MirrorHTTPServer
from tests.mirror_builder import write_v2_spec_files

TAGS = ("develop", "v0.22", "v0.23")
STACKS = 3  # besides root: each tag's listing names 4 indexes


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three tags of build caches and a listing of them all (`listing.json`)."""
    root = tmp_path_factory.mktemp("incremental-sources")
    listing: dict[str, list[dict[str, str]]] = {}
    for seed, tag in enumerate(TAGS, start=20):
        config = MirrorConfig(specs=150, packages=25, stacks=STACKS, seed=seed, tag=tag)
        summary = write_mirror(config, root / tag)
        entries = json.loads(summary.listing.read_text())[tag]
        listing[tag] = [{"label": e["label"], "url": f"{tag}/{e['url']}"} for e in entries]
    _write_listing(root, listing)
    return root


@pytest.fixture
def sources(generated: Path, tmp_path: Path) -> Path:
    """A copy of the generated sources that the test may change."""
    return Path(shutil.copytree(generated, tmp_path / "src"))


def _listing(sources: Path) -> dict[str, list[dict[str, str]]]:
    listing: dict[str, list[dict[str, str]]] = json.loads((sources / "listing.json").read_text())
    return listing


def _write_listing(sources: Path, listing: dict[str, list[dict[str, str]]]) -> None:
    (sources / "listing.json").write_text(json.dumps(listing, indent=1))


def _index_file(sources: Path, tag: str, label: str) -> Path:
    return sources / tag / "stacks" / label / "build_cache" / "index.json"


def _unlist_one_binary(index_file: Path) -> str:
    """Take one binary out of an index (it stays a node, no longer in the build cache);
    return its hash."""
    document = orjson.loads(index_file.read_bytes())
    installs = document["database"]["installs"]
    digest = next(h for h, record in sorted(installs.items()) if record["in_buildcache"])
    installs[digest]["in_buildcache"] = False
    data = orjson.dumps(document)
    index_file.write_bytes(data)
    index_file.with_name("index.json.hash").write_text(hashlib.sha256(data).hexdigest())
    return str(digest)


def _build(sources: Path, out: Path, **options: Any) -> BuildReport:
    return build_index([sources / "listing.json"], out, **options)


def _files(build: Path) -> dict[str, bytes]:
    """Every file of a build but its manifest and its text indexes (whoosh names its
    segments at random): the bytes must be the same whichever way the build was made."""
    return {
        path.relative_to(build).as_posix(): path.read_bytes()
        for path in sorted(build.rglob("*"))
        if path.is_file() and path.name != "manifest.json" and "text" not in path.parts
    }


def _manifest(build: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((build / "manifest.json").read_text())
    return manifest


_TAG_QUERY = """query($tag: String) {
  stacks(tag: $tag) { name numSpecs numPackages }
  specs(tag: $tag, first: 1000) {
    totalCount
    edges { node { hash name version os platform target stacks format namespace sizeBytes
      compiler { name version } dependencies { name hash deptypes }
      dependents { totalCount nodes { hash } } } } }
  search: specs(tag: $tag, search: "py lib", first: 20) { totalCount nodes { hash } }
}"""

_FILTERS = """query($tag: String, $spec: SpecFilter) {
  specs(tag: $tag, filter: $spec, first: 50) {
    totalCount nodes { hash name stacks } facets { packages { value count } } } }"""


def _answers(out: Path, *, filters: bool = False) -> list[bytes]:
    """The answers of the real app serving `out` to a set of queries of every tag."""
    answers = []
    with serving(out, max_first=1000, differential=False) as client:
        tags = [t["name"] for t in client.data("{ tags { name } }")["tags"]]
        answers.append(orjson.dumps(tags))
        for tag in tags:
            answers.append(orjson.dumps(client.data(_TAG_QUERY, tag=tag)))
            if filters:
                answers.extend(
                    orjson.dumps(client(_FILTERS, tag=tag, spec=case.filter))
                    for case in oq.SPEC_FILTERS
                )
    return answers


def _same_as_full(sources: Path, incremental: BuildReport, tmp_path: Path, **kw: Any) -> None:
    """The incremental build holds the files and gives the answers of a full build."""
    _same(incremental, _build(sources, tmp_path / "full", full=True), **kw)


def _same(incremental: BuildReport, full: BuildReport, **kw: Any) -> None:
    assert full.reused == [] and full.compared == 0
    assert _files(incremental.folder) == _files(full.folder)
    mine, theirs = _manifest(incremental.folder), _manifest(full.folder)
    for manifest in (mine, theirs):
        manifest.pop("build_id")
        # Which local files had settled when each build hashed them depends on the clock
        # (tests/test_digest_memo.py), not on what the build holds.
        for entry in manifest["tags"]:
            entry.pop("file_digests")
        # The text indexes' files are named at random: their checksums differ.
        manifest["files"] = {n: f for n, f in manifest["files"].items() if "/text/" not in n}
    assert mine == theirs
    assert _answers(incremental.out, **kw) == _answers(full.out, **kw)


def test_unchanged_sources_reuse_every_tag(sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "ix"
    first = _build(sources, out)
    assert first.compared == 0 and "reused" not in first.summary()
    again = _build(sources, out)
    assert again.reused == list(TAGS) and again.compared == 3
    assert ", reused 3 of 3 tags (develop, v0.22, v0.23) -> " in again.summary()
    assert again.tags == first.tags and again.caches == first.caches == 12
    assert [str(p) for p in again.problems] == [str(p) for p in first.problems]
    assert first.problems  # each tag's dangling edges: carried over with the tag
    # Reused files are the previous build's, linked: the same inode, nothing rewritten.
    dictionaries = "tags/1/dictionaries.json"
    assert (again.folder / dictionaries).stat().st_ino == (
        first.folder / dictionaries
    ).stat().st_ino
    assert IndexStore(out).build_id == again.folder.name  # verified, served
    _same_as_full(sources, again, tmp_path, filters=True)


def test_a_changed_stack_is_read_again(sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "ix"
    before = _build(sources, out)
    label = _listing(sources)["v0.22"][2]["label"]
    digest = _unlist_one_binary(_index_file(sources, "v0.22", label))
    after = _build(sources, out)
    assert after.reused == ["develop", "v0.23"]
    # Its unchanged indexes (root and two stacks) as the first build read them.
    # And its text index (its names are the same): see below.
    assert (
        ", reused 2 of 3 tags (develop, v0.23) and 3 indexes and 1 text index as read before -> "
        in after.summary()
    )
    assert after.tags == before.tags  # still a binary of root: only its stacks changed
    with serving(out) as client:
        spec = client.data(
            'query($h: String!) { spec(hash: $h, tag: "v0.22") { stacks } }', h=digest
        )
    assert label not in spec["spec"]["stacks"]
    _same_as_full(sources, after, tmp_path, filters=True)


def _text_inodes(build: Path, tag_folder: int) -> set[int]:
    return {path.stat().st_ino for path in (build / "tags" / str(tag_folder) / "text").iterdir()}


def _rename_one_package(index_file: Path) -> str:
    """Give one record of an index a package name no other has; return the name."""
    document = orjson.loads(index_file.read_bytes())
    record = next(iter(sorted(document["database"]["installs"].items())))[1]
    record["spec"]["name"] = name = "renamed-for-a-test"
    data = orjson.dumps(document)
    index_file.write_bytes(data)
    index_file.with_name("index.json.hash").write_text(hashlib.sha256(data).hexdigest())
    return name


def test_a_tag_read_again_with_the_same_names_takes_its_text_index(
    sources: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ix"
    before = _build(sources, out)
    _unlist_one_binary(_index_file(sources, "v0.22", _listing(sources)["v0.22"][2]["label"]))
    after = _build(sources, out)
    assert after.reused == ["develop", "v0.23"]
    # v0.22 (tags/1) was read again; its packages and variants are the same: its text
    # index is the previous build's files, linked (the same inodes), not written again.
    assert _text_inodes(after.folder, 1) == _text_inodes(before.folder, 1)
    _same_as_full(sources, after, tmp_path)


def test_a_text_index_is_written_again_when_its_names_change_or_it_is_damaged(
    sources: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ix"
    before = _build(sources, out)
    name = _rename_one_package(_index_file(sources, "v0.22", "root"))
    renamed = _build(sources, out)
    assert renamed.reused == ["develop", "v0.23"]
    assert _text_inodes(renamed.folder, 1).isdisjoint(_text_inodes(before.folder, 1))
    with serving(out) as client:
        found = client.data('{ packages(tag: "v0.22", search: "renamed") { nodes { name } } }')
    assert found["packages"]["nodes"] == [{"name": name}]
    # A segment changed in place (its size the same): its checksum tells, it is not taken.
    segment = next((renamed.folder / "tags" / "1" / "text").glob("*.seg"))
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0x01
    segment.write_bytes(bytes(data))
    _unlist_one_binary(_index_file(sources, "v0.22", _listing(sources)["v0.22"][2]["label"]))
    after = _build(sources, out)
    assert after.reused == ["develop", "v0.23"]
    assert _text_inodes(after.folder, 1).isdisjoint(_text_inodes(renamed.folder, 1))
    assert IndexStore(out).build_id == after.folder.name  # verified: none of the damage
    _same_as_full(sources, after, tmp_path)


def test_a_text_folder_replaced_by_a_link_is_not_taken(sources: Path, tmp_path: Path) -> None:
    """A link is not followed out of the build, even to files that pass their checks."""
    out = tmp_path / "ix"
    before = _build(sources, out)
    text = before.folder / "tags" / "1" / "text"
    copy = Path(shutil.copytree(text, tmp_path / "elsewhere"))
    shutil.rmtree(text)
    text.symlink_to(copy)
    digest = _manifest(before.folder)["tags"][1]["text"]
    previous = PreviousBuild.open(out)
    assert previous is not None
    into = tmp_path / "new-text"
    assert not previous.take_text("v0.22", digest, into)
    assert not into.exists()
    text.unlink()
    shutil.copytree(copy, text)  # the same files in place: taken
    assert PreviousBuild.open(out).take_text("v0.22", digest, into)  # type: ignore[union-attr]


def test_a_removed_stack_is_picked_up(sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "ix"
    _build(sources, out)
    listing = _listing(sources)
    removed = listing["v0.23"].pop()["label"]
    _write_listing(sources, listing)
    after = _build(sources, out)
    assert after.reused == ["develop", "v0.22"] and after.caches == 11
    assert removed not in _stacks(out, "v0.23")
    _same_as_full(sources, after, tmp_path)


def test_an_added_stack_is_picked_up(sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "ix"
    _build(sources, out)
    listing = _listing(sources)
    # develop's root index, also listed in tag v0.22 as a new stack.
    listing["v0.22"].append({"label": "borrowed", "url": listing["develop"][0]["url"]})
    _write_listing(sources, listing)
    after = _build(sources, out)
    assert after.reused == ["develop", "v0.23"] and after.caches == 13
    assert "borrowed" in _stacks(out, "v0.22")
    _same_as_full(sources, after, tmp_path)


def test_added_and_removed_tags_are_picked_up(sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "ix"
    _build(sources, out)
    listing = _listing(sources)
    listing["a-new-tag"] = listing.pop("develop")  # tags/0 now, before the reused ones
    _write_listing(sources, listing)
    after = _build(sources, out)
    assert after.reused == ["v0.22", "v0.23"]
    assert ", reused 2 of 3 tags (v0.22, v0.23) -> " in after.summary()
    tags = _manifest(after.folder)["tags"]
    assert [(t["name"], t["folder"]) for t in tags] == [
        ("a-new-tag", "tags/0"),
        ("v0.22", "tags/1"),
        ("v0.23", "tags/2"),
    ]
    _same_as_full(sources, after, tmp_path)

    del listing["v0.22"]  # the reused tags move to other folders
    _write_listing(sources, listing)
    fewer = _build(sources, out)
    assert fewer.reused == ["a-new-tag", "v0.23"] and list(fewer.tags) == fewer.reused
    _same_as_full(sources, fewer, tmp_path / "fewer")


def test_a_damaged_previous_build_rebuilds_the_damaged_tag(sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "ix"
    before = _build(sources, out)
    damaged = before.folder / "tags" / "1" / "hash.sorted.npy"
    data = bytearray(damaged.read_bytes())
    data[-1] ^= 0x01
    damaged.write_bytes(bytes(data))  # same size: only its checksum tells
    (before.folder / "tags" / "2" / "size.npy").unlink()
    after = _build(sources, out)
    assert after.reused == ["develop"]
    assert IndexStore(out).build_id == after.folder.name  # verified: none of the damage
    _same_as_full(sources, after, tmp_path)


def test_an_unreadable_previous_manifest_means_a_full_build(sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "ix"
    before = _build(sources, out)
    (before.folder / "manifest.json").write_text("{ not json")
    after = _build(sources, out)
    assert after.reused == [] and after.compared == 0
    _same_as_full(sources, after, tmp_path)


@pytest.mark.parametrize("process_from", [1, None], ids=["reader-process", "in-process"])
def test_a_changed_local_v3_mirror_is_read_again(
    generated: Path, tmp_path: Path, process_from: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone v3 mirror is known by its index manifest, its views' manifests and its
    spec manifests (which give the tarballs' sizes): the latter by the status each was
    read with, by whichever process read them, which must be what a later build finds."""
    if process_from is not None:
        monkeypatch.setattr(tarball_sizes, "PROCESS_FROM", process_from)
    mirror = Path(shutil.copytree(generated / "develop" / "mirror", tmp_path / "mirror"))
    out = tmp_path / "ix"
    first = build_index([mirror], out, tag="develop")
    assert (first.helper_rss_mb > 0) == (process_from is not None)
    assert build_index([mirror], out, tag="develop").reused == ["develop"]
    spec_manifests = sorted((mirror / "v3" / "manifests" / "spec").glob("*/*.json"))
    status = spec_manifests[1].stat()  # touched only: its time is what stands for it
    os.utime(spec_manifests[1], ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))
    touched = build_index([mirror], out, tag="develop")
    assert touched.reused == [] and touched.compared == 1
    assert build_index([mirror], out, tag="develop").reused == ["develop"]
    spec_manifest = spec_manifests[0]
    spec_manifest.write_bytes(spec_manifest.read_bytes().replace(b'"contentLength"', b'"x"'))
    after = build_index([mirror], out, tag="develop")
    assert after.reused == [] and after.compared == 1
    assert any("without a tarball size" in str(p) for p in after.problems)
    assert build_index([mirror], out, tag="develop").reused == ["develop"]
    spec_manifest.unlink()
    removed = build_index([mirror], out, tag="develop")
    assert removed.reused == [] and removed.compared == 1
    assert build_index([mirror], out, tag="develop").reused == ["develop"]


@pytest.mark.parametrize("ahead_from", [1, None], ids=["helper", "build-alone"])
def test_local_v3_mirrors_looked_at_ahead_are_reused_and_read_again_alike(
    sources: Path, tmp_path: Path, ahead_from: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each tag a local v3 mirror listed by its root: the fingerprints' looks at their
    spec manifests taken by a helper ahead of need (look_ahead.py, from the first
    manifest) or by the build alone. Unchanged tags are reused, the one whose manifest
    was touched is read again, and the build holds what a full build does."""
    if ahead_from is not None:
        monkeypatch.setattr(look_ahead, "AHEAD_FROM", ahead_from)
    _write_listing(sources, {tag: [{"label": "root", "url": f"{tag}/mirror"}] for tag in TAGS})
    out = tmp_path / "ix"
    assert _build(sources, out).compared == 0
    assert _build(sources, out).reused == list(TAGS)
    manifests = sources / "v0.22" / "mirror" / "v3" / "manifests" / "spec"
    manifest = next(manifests.glob("*/*.spec.manifest.json"))
    status = manifest.stat()
    os.utime(manifest, ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))
    again = _build(sources, out)
    assert again.reused == ["develop", "v0.23"] and again.compared == 3
    _same_as_full(sources, again, tmp_path)
    assert _build(sources, out).reused == list(TAGS)


def test_a_tag_whose_index_moved_is_read_first_without_looking_at_its_mirrors(
    sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Index fingerprints (index/tag_checks.py): a tag whose index changed is known so
    before any of its spec manifests is looked at, and is read first (its lone mirror's
    manifests by their reader, never looked at); the others are compared after it, and
    the build lists its tags, numbers their folders and says its problems by name. A tag
    whose spec manifests alone moved is found so by its full fingerprint; a previous
    build without index fingerprints (older code) is compared by its fingerprints."""
    _write_listing(sources, {tag: [{"label": "root", "url": f"{tag}/mirror"}] for tag in TAGS})
    out = tmp_path / "ix"
    _build(sources, out)
    events: list[tuple[str, str]] = []
    real_look, real_ingest = identity.look, ingest_caches

    def looked(root: Any, *args: Any, **kwargs: Any) -> Any:
        events.append(("look", Path(str(root)).parent.name))
        return real_look(root, *args, **kwargs)

    def ingested(tag: str, *args: Any, **kwargs: Any) -> None:
        events.append(("read", tag))
        real_ingest(tag, *args, **kwargs)

    monkeypatch.setattr("cachegql.index.ingest.look_ahead.look", looked)
    monkeypatch.setattr("cachegql.index.build.ingest_caches", ingested)
    mirror = sources / "v0.22" / "mirror"
    index = _index_file(sources, "v0.22", "root")
    _unlist_one_binary(index)
    mb.write_index_manifest(mirror, index.read_bytes(), (8,), False)
    again = _build(sources, out)
    assert events == [("read", "v0.22"), ("look", "develop"), ("look", "v0.23")]
    assert again.reused == ["develop", "v0.23"] and again.compared == 3
    assert [t["name"] for t in _manifest(again.folder)["tags"]] == list(TAGS)
    assert [t["folder"] for t in _manifest(again.folder)["tags"]] == ["tags/0", "tags/1", "tags/2"]
    _same_as_full(sources, again, tmp_path)

    manifest = next((mirror / "v3" / "manifests" / "spec").glob("*/*.spec.manifest.json"))
    status = manifest.stat()
    os.utime(manifest, ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))
    events.clear()
    touched = _build(sources, out)
    assert events == [("look", "develop"), ("look", "v0.22"), ("read", "v0.22"), ("look", "v0.23")]
    assert touched.reused == ["develop", "v0.23"]

    previous = _manifest(touched.folder)
    for entry in previous["tags"]:
        del entry["index_fingerprint"]
    (touched.folder / "manifest.json").write_text(json.dumps(previous))
    _unlist_one_binary(index)
    mb.write_index_manifest(mirror, index.read_bytes(), (8,), False)
    events.clear()
    older = _build(sources, out)
    assert events == [("look", "develop"), ("look", "v0.22"), ("read", "v0.22"), ("look", "v0.23")]
    assert older.reused == ["develop", "v0.23"]
    _same_as_full(sources, older, tmp_path / "older")


def test_pages_are_always_read(tmp_path: Path) -> None:
    out = tmp_path / "ix"
    build_index([PAGES], out)
    again = build_index([PAGES], out)
    assert again.reused == [] and again.compared == 0
    assert "reused" not in again.summary()


def test_the_cli_says_what_it_reused_and_full_reads_everything(
    sources: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ix"

    def index(*flags: str) -> str:
        command = [CLI, "index", str(sources / "listing.json"), "--out", str(out), "-q", *flags]
        run = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
        return run.stdout.strip().splitlines()[-1]

    assert "reused" not in index()
    assert ", reused 3 of 3 tags (develop, v0.22, v0.23) -> " in index()
    assert "reused" not in index("--full")


def _stacks(out: Path, tag: str) -> list[str]:
    with serving(out) as client:
        stacks = client.data("query($t: String) { stacks(tag: $t) { name } }", t=tag)["stacks"]
    return [s["name"] for s in stacks]


def test_remote_sources_are_reused_by_revalidating_them(sources: Path, tmp_path: Path) -> None:
    """Over http, an unchanged index costs a revalidation (304), not a download."""
    out = tmp_path / "ix"
    with MirrorHTTPServer(sources) as http, HttpReader(tmp_path / "fetch") as reader:
        listing = http.url_for("listing.json")
        build_index([listing], out, reader=reader)
        http.clear_log()
        again = build_index([listing], out, reader=reader)
        assert again.reused == list(TAGS)
        indexes = http.requests("/", method="GET")
        assert {e.status for e in indexes if e.path.endswith("/index.json")} == {304}
        assert sum(e.bytes_sent for e in indexes if e.path.endswith("/index.json")) == 0

        _unlist_one_binary(_index_file(sources, "v0.23", _listing(sources)["v0.23"][1]["label"]))
        after = build_index([listing], out, reader=reader)
        assert after.reused == ["develop", "v0.22"]
        _same(after, build_index([listing], tmp_path / "full", reader=reader, full=True))


def test_strict_fails_on_the_problems_of_a_reused_tag(sources: Path, tmp_path: Path) -> None:
    """A reused tag tells its problems again, so --strict fails as a full build would."""
    out = tmp_path / "ix"
    first = _build(sources, out)
    with pytest.raises(StrictModeError) as caught:
        _build(sources, out, strict=True)
    assert str(caught.value) == str(first.problems[0])
    assert out.resolve() == first.folder  # nothing published


def _index_blob(mirror: Path, view: str | None = None) -> Path:
    """The blob a local v3 mirror's index manifest (or a view's) names."""
    folder = mirror / "v3" / "manifests" / "index"
    manifest = json.loads(
        ((folder / view) if view else folder).joinpath("index.manifest.json").read_text()
    )
    checksum: str = next(r["checksum"] for r in manifest["data"] if "spack.db" in r["mediaType"])
    return mirror / "blobs" / "sha256" / checksum[:2] / checksum


def _mirror_and_listing(sources: Path, out: Path) -> tuple[Path, BuildReport]:
    """Build the listing plus develop's local v3 mirror (in tag develop): the mirror and
    the build."""
    mirror = sources / "develop" / "mirror"
    return mirror, build_index([sources / "listing.json", mirror], out, tag="develop")


def test_a_v3_blob_that_failed_to_read_is_read_again_once_restored(
    sources: Path, tmp_path: Path
) -> None:
    """A cache whose index blob is missing is left out of its tag with a problem: the tag
    gets no fingerprint, so it is read again once the blob is back."""
    out = tmp_path / "ix"
    blob = _index_blob(sources / "develop" / "mirror")
    blob.rename(blob.with_name("away"))
    _, degraded = _mirror_and_listing(sources, out)
    assert degraded.caches == 12
    [missed] = [p for p in degraded.problems if "skipped" in p.message]
    # Named as what it is, not as a root tried as layout v2 too ("no build cache there").
    assert "index.manifest.json names an index blob that is missing (" in missed.message
    assert str(blob) in missed.message
    assert _manifest(degraded.folder)["tags"][0]["fingerprint"] is None
    blob.with_name("away").rename(blob)
    _, after = _mirror_and_listing(sources, out)
    assert after.reused == ["v0.22", "v0.23"] and after.caches == 13
    assert not any("skipped" in str(p) for p in after.problems)
    full = build_index(
        [sources / "listing.json", sources / "develop" / "mirror"],
        tmp_path / "full",
        tag="develop",
        full=True,
    )
    _same(after, full)


def test_a_v3_view_blob_that_failed_to_read_is_read_again_once_restored(
    sources: Path, tmp_path: Path
) -> None:
    """A view whose blob is missing is skipped, its cache read: the tag still gets no
    fingerprint."""
    out = tmp_path / "ix"
    mirror = sources / "develop" / "mirror"
    view = sorted(p.name for p in (mirror / "v3" / "manifests" / "index").iterdir() if p.is_dir())[
        0
    ]
    blob = _index_blob(mirror, view)
    blob.rename(blob.with_name("away"))
    _, degraded = _mirror_and_listing(sources, out)
    assert degraded.caches == 13 and any("view skipped" in str(p) for p in degraded.problems)
    blob.with_name("away").rename(blob)
    _, after = _mirror_and_listing(sources, out)
    assert after.reused == ["v0.22", "v0.23"]
    assert not any("view skipped" in str(p) for p in after.problems)
    assert view in _stacks(out, "develop")


def test_a_remote_v2_that_failed_to_read_is_read_again_and_not_asked_twice(
    sources: Path, tmp_path: Path
) -> None:
    """A remote v2 mirror whose `index.json.hash` answers 500 once: skipped in the first
    build, whose fingerprint does not ask for it again; read in the next."""
    out = tmp_path / "ix"
    hash_file = "develop/stacks/root/build_cache/index.json.hash"
    with MirrorHTTPServer(sources) as http, HttpReader(tmp_path / "fetch", retries=0) as reader:
        mirror = http.url_for("develop/stacks/root")
        sources_ = [http.url_for("listing.json"), mirror]
        http.server_error(hash_file, times=1)
        degraded = build_index(sources_, out, reader=reader, tag="develop")
        assert degraded.caches == 12 and any("skipped" in str(p) for p in degraded.problems)
        assert len([e for e in http.requests("/") if e.path == "/" + hash_file]) == 1
        after = build_index(sources_, out, reader=reader, tag="develop")
        assert after.reused == ["v0.22", "v0.23"] and after.caches == 13
        _same(
            after, build_index(sources_, tmp_path / "full", reader=reader, tag="develop", full=True)
        )


def test_a_spec_manifest_rewritten_during_the_build_is_read_again(
    sources: Path, tmp_path: Path
) -> None:
    """The fingerprint is of the files as they were before the ingest read them: one
    rewritten while the build runs makes the next build read its tag again."""
    out, mirror = tmp_path / "ix", sources / "develop" / "mirror"
    spec_manifest = sorted((mirror / "v3" / "manifests" / "spec").glob("*/*.json"))[0]

    def rewrite(done: int, _: int) -> None:
        if done == 2:  # the mirror, develop's first cache, is read: the listing's next
            data = spec_manifest.read_bytes().replace(b'"contentLength"', b'"x"')
            spec_manifest.write_bytes(data)

    during = build_index(
        [mirror, sources / "listing.json"], out, tag="develop", on_progress=rewrite
    )
    assert not any("without a tarball size" in str(p) for p in during.problems)
    after = build_index([mirror, sources / "listing.json"], out, tag="develop")
    assert after.reused == ["v0.22", "v0.23"]
    assert any("without a tarball size" in str(p) for p in after.problems)


def test_a_change_to_the_code_that_writes_changes_the_fingerprints(tmp_path: Path) -> None:
    """The code's part of every fingerprint is the digest of the files that decide what
    is written: a copy of the package digests the same until one of them changes."""
    package = Path(build_module.__file__).parent
    copy = Path(
        shutil.copytree(package, tmp_path / "index", ignore=shutil.ignore_patterns("__pycache__"))
    )
    digest = code_digest(package)
    assert code_digest(copy) == digest
    (copy / "query" / "search.py").write_text("# not what a build writes\n")
    assert code_digest(copy) == digest
    for changed in (
        "ingest/buildcache.py",
        "disk/write.py",
        "disk/graph_writer.py",
        "spack/versions.py",
        "records.py",
    ):
        with (copy / changed).open("a") as file:
            file.write("\n")
        assert code_digest(copy) != digest, changed
        digest = code_digest(copy)
    (copy / "ingest" / "new_module.py").write_text("")
    assert code_digest(copy) != digest


def test_only_the_limits_on_content_are_in_the_fingerprint(sources: Path, tmp_path: Path) -> None:
    out = tmp_path / "ix"
    _build(sources, out)
    fewer_fetches = SourceLimits(max_fetches=1, max_seconds=60, max_redirects=1)
    assert _build(sources, out, limits=fewer_fetches).reused == list(TAGS)
    assert _build(sources, out, limits=SourceLimits(max_bytes=1 << 29)).reused == []


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda m: m.update(mirrors=None), id="mirrors-null"),
        pytest.param(lambda m: m.update(mirrors=[]), id="mirrors-list"),
        pytest.param(lambda m: m.update(tags={}), id="tags-object"),
        pytest.param(lambda m: m["tags"][1].update(specs=True), id="count-bool"),
        pytest.param(lambda m: m["tags"][1].update(caches="4"), id="count-string"),
        pytest.param(lambda m: m["tags"][1].update(problems=[["only a path"]]), id="problem"),
        pytest.param(lambda m: m["tags"][1].update(fingerprint=1), id="fingerprint-int"),
        pytest.param(
            lambda m: m["tags"][1].update(index_fingerprint=[]), id="index-fingerprint-list"
        ),
        pytest.param(lambda m: m["tags"][1].update(text=5), id="text-int"),
        pytest.param(lambda m: m["mirrors"].update({"v0.22": ["a list"]}), id="tag-mirrors"),
        pytest.param(lambda m: m["tags"][1].update(file_digests=[]), id="file-digests-list"),
        pytest.param(
            lambda m: m["tags"][1].update(file_digests={"/a": [1, 2, 3, 4, True, "0" * 64]}),
            id="file-digest-bool",
        ),
        pytest.param(
            lambda m: m["tags"][1].update(file_digests={"/a": [1, 2, 3, 4, 5, "not hex"]}),
            id="file-digest-sha",
        ),
    ],
)
def test_a_malformed_previous_manifest_means_a_full_build(
    sources: Path, tmp_path: Path, damage: Any
) -> None:
    out = tmp_path / "ix"
    before = _build(sources, out)
    manifest = _manifest(before.folder)
    manifest.setdefault("mirrors", {})
    damage(manifest)
    (before.folder / "manifest.json").write_text(json.dumps(manifest))
    after = _build(sources, out)
    assert after.reused == [] and after.compared == 0
    assert after.tags == before.tags


@pytest.mark.parametrize("change", ["unlisted", "extra"])
def test_a_tag_folder_unlike_its_manifest_entry_is_read_again(
    sources: Path, tmp_path: Path, change: str
) -> None:
    """A file of the tag's folder the manifest does not list (or the other way round):
    the tag is read again, not published incomplete."""
    out = tmp_path / "ix"
    before = _build(sources, out)
    if change == "unlisted":
        manifest = _manifest(before.folder)
        del manifest["files"]["tags/1/size.npy"]
        (before.folder / "manifest.json").write_text(json.dumps(manifest))
    else:
        (before.folder / "tags" / "1" / "stray.npy").write_bytes(b"")
    after = _build(sources, out)
    assert after.reused == ["develop", "v0.23"]
    assert (after.folder / "tags" / "1" / "size.npy").is_file()
    assert not (after.folder / "tags" / "1" / "stray.npy").exists()
    assert IndexStore(out).build_id == after.folder.name
    _same_as_full(sources, after, tmp_path)


def test_a_spec_file_mirror_changed_during_the_build_is_read_again(
    sources: Path, tmp_path: Path
) -> None:
    """A local v2 mirror of spec files (no index) is known by its files' names, sizes and
    times, taken before the ingest: unchanged, it is reused; one spec file removed while
    the build runs makes the next build read its tag again."""
    out, mirror = tmp_path / "ix", tmp_path / "spec-mirror"
    label = _listing(sources)["develop"][1]["label"]
    spec_files = write_v2_spec_files(_index_file(sources, "develop", label), mirror / "build_cache")
    given = [mirror, sources / "listing.json"]
    build_index(given, out, tag="develop")
    assert build_index(given, out, tag="develop").reused == list(TAGS)

    def remove(done: int, _: int) -> None:
        if done == 2:  # the mirror, develop's first cache, is read: the listing's next
            spec_files[0].unlink()

    build_index(given, out, tag="develop", on_progress=remove, full=True)
    after = build_index(given, out, tag="develop")
    assert after.reused == ["v0.22", "v0.23"]
    assert build_index(given, out, tag="develop").reused == list(TAGS)


def test_the_manifests_are_known_by_their_status_before_they_were_read(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest touched right after it was read (its status taken before) makes the
    next build read the tag again: the stock is never of content newer than was read."""
    mirror = Path(shutil.copytree(generated / "develop" / "mirror", tmp_path / "mirror"))
    out = tmp_path / "ix"
    target = str(sorted((mirror / "v3" / "manifests" / "spec").glob("*/*.json"))[3])

    def read_then_touch(
        path: str, *, listed_regular: bool, limit: int | None
    ) -> tuple[bytes, os.stat_result]:
        found = read_regular_status(path, listed_regular=listed_regular, limit=limit)
        if path == target:
            status = Path(path).stat()
            os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))
        return found

    monkeypatch.setattr(tarball_sizes, "read_regular_status", read_then_touch)
    build_index([mirror], out, tag="develop")
    monkeypatch.undo()
    again = build_index([mirror], out, tag="develop")
    assert again.reused == [] and again.compared == 1
    assert build_index([mirror], out, tag="develop").reused == ["develop"]
