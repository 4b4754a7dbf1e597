"""Indexes kept as read (index/ingest/cache_parts.py): a tag read again takes the index
files that did not change from the parts an earlier build kept of them, and gives the
nodes, the flags, the problems and the build that reading them gives.

The records of tests/test_seen_nodes.py (every layout, every way a second cache's records
may differ from the first's) read into parts and taken back; real generated build caches
built, changed and built again on disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from cachegql.index import StrictModeError, build_index
from cachegql.index.build import BuildReport
from cachegql.index.ingest import SourceLimits, digest_memo, files, recording, tarball_sizes
from cachegql.index.ingest.cache_parts import decode_part, encode_part
from cachegql.index.ingest.dag_nodes import Database, SourceFormatError
from cachegql.index.ingest.seen_nodes import SeenNodes
from cachegql.index.ingest.spackdb import PartEntry, read_database
from cachegql.server.fetch import HttpReader
from tests import mirror_builder as mb
from tests.http_fixture import MirrorHTTPServer
from tests.mirror_builder import DEFAULT_TARBALL_SIZE, write_listed_tags
from tests.test_seen_nodes import CHANGES, HASHES, LAYOUTS, _index

TAGS = ("develop", "v0.22")


def _as_read(database: Database | None) -> object:
    """What a database holds, in its order: nodes (flags included) and problems."""
    if database is None:
        return None
    nodes = [(h, node, node.in_buildcache) for h, node in database.nodes.items()]
    return database.version, nodes, [str(p) for p in database.problems]


def _read_keeping(documents: list[bytes], seen: SeenNodes) -> list[tuple[object, bytes | None]]:
    """Each document read in turn with `seen`: what it gave, and its part (None: it is
    no index, and reading it fails)."""
    found: list[tuple[object, bytes | None]] = []
    for number, data in enumerate(documents):
        entries: list[PartEntry] = []
        try:
            database = read_database(data, f"cache{number}", seen, part=entries)
        except SourceFormatError as exc:
            found.append((str(exc), None))
            continue
        problems = [p.message for p in database.problems]
        part = encode_part(database.version, entries, problems, keyed=True)
        found.append((_as_read(database), part))
    return found


def _taken(read: list[tuple[object, bytes | None]], seen: SeenNodes | None) -> list[object]:
    """The parts of `read` taken in turn with `seen` (where reading failed, its error)."""
    return [
        _as_read(decode_part(part, f"cache{n}", seen)) if part is not None else found
        for n, (found, part) in enumerate(read)
    ]


def _documents(layout: str, change: str) -> list[bytes]:
    how, _ = CHANGES[change]
    return [_index(LAYOUTS[layout]), _index(LAYOUTS[layout], how)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("change", CHANGES)
def test_parts_give_what_reading_gives(layout: str, change: str) -> None:
    read = _read_keeping(_documents(layout, change), SeenNodes())
    assert read[0][1] is not None
    seen = SeenNodes()
    assert _taken(read, seen) == [found for found, _ in read]
    assert seen.taken == CHANGES[change][1]


@pytest.mark.parametrize("change", ["the same bytes", "another ref_count", "binaries only"])
def test_a_part_given_by_a_cache_not_read_before_it_is_not_taken(change: str) -> None:
    """The second cache's records were the first's: its part names them by their keys
    only, and without the first read before it, it gives nothing (the index is read)."""
    (first, first_part), (_, second_part) = _read_keeping(
        _documents("compact", change), SeenNodes()
    )
    assert first_part is not None and second_part is not None
    assert decode_part(second_part, "cache1", SeenNodes()) is None
    assert decode_part(second_part, "cache1", None) is None
    # The first cache's part needs no other.
    assert _as_read(decode_part(first_part, "cache0", SeenNodes())) == first
    assert _as_read(decode_part(first_part, "cache0", None)) == first


def test_a_part_read_in_another_order_gives_what_reading_gives() -> None:
    """A part kept when its cache was read first, taken when another is read before it."""
    documents = _documents("compact", "another ref_count")
    part = _read_keeping(documents, SeenNodes())[0][1]
    assert part is not None
    seen = SeenNodes()
    second_first: list[Database | None] = [read_database(documents[1], "cache1", seen)]
    second_first.append(decode_part(part, "cache0", seen))
    assert seen.taken == 6  # the part's records, read alike in the other cache first
    again = SeenNodes()
    expected = [read_database(documents[1], "cache1", again)]
    expected.append(read_database(documents[0], "cache0", again))
    assert [_as_read(d) for d in second_first] == [_as_read(d) for d in expected]


def test_a_part_refused_half_way_leaves_the_tag_s_nodes_as_they_were() -> None:
    """A part of six records, the first and the fourth given by an earlier cache when it
    was kept: taken after a cache with the same first record and another fourth, its
    first record is taken and its fourth refused; neither the nodes it read nor its count
    of taken records stay behind for the index read instead."""
    whole = _index(LAYOUTS["compact"])
    installs = orjson.loads(whole)["database"]["installs"]
    first, fourth = HASHES[0], HASHES[3]

    def earlier(changed: bool) -> bytes:
        other = orjson.dumps(installs[fourth])
        other = other.replace(b'"1.0"', b'"7.7"') if changed else other
        records = [(first, orjson.dumps(installs[first])), (fourth, other)]
        body = b",".join(b'"' + h.encode() + b'":' + r for h, r in records)
        return b'{"database":{"version":"8","installs":{' + body + b"}}}"

    part = _read_keeping([earlier(False), whole], SeenNodes())[1][1]
    assert part is not None
    seen = SeenNodes()
    read_database(earlier(True), "other", seen)
    assert [digest for digest in HASHES if digest in seen] == [first, fourth]
    assert seen.taken == 0
    assert decode_part(part, "cache1", seen) is None
    assert [digest for digest in HASHES if digest in seen] == [first, fourth]
    assert seen.taken == 0  # the first record was taken, then given back
    # Read instead, the index gives what reading it after that cache gives.
    clean = SeenNodes()
    read_database(earlier(True), "other", clean)
    assert _as_read(read_database(whole, "cache1", seen)) == _as_read(
        read_database(whole, "cache1", clean)
    )
    assert seen.taken == clean.taken == 1


def test_a_scan_that_failed_half_way_leaves_no_node_behind() -> None:
    """An index whose second record holds a `\\u` escape: the compact scan reads the first,
    then gives up, and the exact scan reads the index again. The first record's node is
    then its own, not one "another cache gave" (a part that said so would never be
    taken); the part is taken after the same earlier cache as it was kept after."""
    whole = _index(LAYOUTS["compact"])
    installs = orjson.loads(whole)["database"]["installs"]
    records = [
        b'"' + digest.encode() + b'":' + orjson.dumps(installs[digest]) for digest in HASHES[:2]
    ]
    records[1] = records[1].replace(b'"builtin"', b'"built\\u0069n"')
    escaped = b'{"database":{"version":"8","installs":{' + b",".join(records) + b"}}}"
    last = HASHES[5]  # another cache of the tag, read first: a record of another hash
    other = (
        b'{"database":{"version":"8","installs":{"'
        + last.encode()
        + b'":'
        + orjson.dumps(installs[last])
        + b"}}}"
    )
    seen = SeenNodes()
    read_database(other, "other", seen)
    entries: list[PartEntry] = []
    database = read_database(escaped, "cache1", seen, part=entries)
    assert [taken for *_, taken in entries] == [False, False] and seen.taken == 0
    part = encode_part(database.version, entries, [], keyed=True)
    again = SeenNodes()
    read_database(other, "other", again)
    assert _as_read(decode_part(part, "cache1", again)) == _as_read(database)


def test_a_part_kept_without_a_tag_s_nodes_is_not_taken_with_them() -> None:
    """A part of a lone cache's index has no keys to keep its nodes under: taken in a
    tag of several caches, the next cache would not find them; it is refused there."""
    entries: list[PartEntry] = []
    whole = _index(LAYOUTS["compact"])
    database = read_database(whole, "cache0", None, part=entries)
    part = encode_part(database.version, entries, [], keyed=False)
    assert _as_read(decode_part(part, "cache0", None)) == _as_read(database)
    assert decode_part(part, "cache0", SeenNodes()) is None


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda part: part[:-1], id="cut short"),
        pytest.param(lambda part: part[:-5] + bytes([part[-5] ^ 1]) + part[-4:], id="a bit"),
        pytest.param(lambda part: b"other" + part[5:], id="another header"),
        pytest.param(lambda part: b"", id="empty"),
    ],
)
def test_a_damaged_part_is_not_taken(damage: Any) -> None:
    part = _read_keeping(_documents("compact", "the same bytes"), SeenNodes())[0][1]
    assert part is not None and decode_part(part, "cache0", SeenNodes()) is not None
    assert decode_part(damage(part), "cache0", SeenNodes()) is None


# Whole builds.


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tags of a root and three stacks each, and a listing naming their index files."""
    root = tmp_path_factory.mktemp("parts-sources")
    return write_listed_tags(root, TAGS, specs=90, packages=15, stacks=3, first_seed=60)


@pytest.fixture
def sources(generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # The files were just written: known by their status at once (test_digest_memo.py).
    monkeypatch.setattr(digest_memo, "SETTLED_NS", 0)
    return Path(shutil.copytree(generated, tmp_path / "src"))


def _build(sources: Path, out: Path, **options: Any) -> BuildReport:
    return build_index([sources / "listing.json"], out, **options)


def _index_files(sources: Path, tag: str) -> list[Path]:
    return sorted((sources / tag).rglob("index.json"))


def _tag_files(build: Path) -> dict[str, bytes]:
    """A build's files but its manifest and text indexes (named at random by whoosh)."""
    return {
        path.relative_to(build).as_posix(): path.read_bytes()
        for path in sorted(build.rglob("*"))
        if path.is_file() and path.name != "manifest.json" and "text" not in path.parts
    }


def _parts_named(build: Path) -> dict[str, list[str]]:
    manifest = json.loads((build / "manifest.json").read_text())
    return {entry["name"]: entry["parts"] for entry in manifest["tags"]}


def _add_a_dependency_flag(index: Path) -> None:
    """Make one stack's index another (one binary out of its build cache)."""
    document = json.loads(index.read_text())
    installs = document["database"]["installs"]
    digest = next(h for h, r in sorted(installs.items()) if r["in_buildcache"])
    installs[digest]["in_buildcache"] = False
    index.write_text(json.dumps(document, separators=(",", ":")))


def test_a_tag_read_again_takes_its_unchanged_indexes_from_parts(
    sources: Path, tmp_path: Path, reads: list[str]
) -> None:
    out = tmp_path / "ix"
    first = _build(sources, out)
    parts = out.with_name("ix.parts")
    kept = _parts_named(first.folder)
    assert {len(names) for names in kept.values()} == {4}  # a part per index of each tag
    assert sorted(p.name for p in parts.iterdir()) == sorted(n for v in kept.values() for n in v)
    changed = next(p for p in _index_files(sources, "v0.22") if "root" not in p.parts)
    _add_a_dependency_flag(changed)
    reads.clear()
    again = _build(sources, out)
    assert again.reused == ["develop"] and again.parts_taken == 3
    assert ", reused 1 of 2 tags (develop) and 3 indexes and 1 text index as read before -> " in (
        again.summary()
    )
    assert {r for r in reads if r.endswith("index.json")} == {str(changed)}  # the rest: by status
    full = _build(sources, tmp_path / "full", full=True)
    assert full.parts_taken == 0
    assert _tag_files(again.folder) == _tag_files(full.folder)
    assert _parts_named(again.folder) == _parts_named(full.folder)
    # The changed index's old part is named by no tag any more: gone; the rest stay.
    now = _parts_named(again.folder)
    assert sorted(p.name for p in parts.iterdir()) == sorted(n for v in now.values() for n in v)
    assert now["develop"] == kept["develop"] and now["v0.22"] != kept["v0.22"]


def _list_mirror_roots(sources: Path) -> None:
    """The listing names each stack's v2 mirror root (with its `index.json.hash`), not
    its index file."""
    listing = json.loads((sources / "listing.json").read_text())
    roots = {
        tag: [{**e, "url": e["url"].removesuffix("/build_cache/index.json")} for e in entries]
        for tag, entries in listing.items()
    }
    (sources / "listing.json").write_text(json.dumps(roots))


def _hash_again(index: Path, text: str | None = None) -> None:
    digest = hashlib.sha256(index.read_bytes()).hexdigest()
    index.with_name("index.json.hash").write_text(digest if text is None else text)


def test_a_tag_of_v2_mirror_roots_takes_its_unchanged_indexes_from_parts(
    sources: Path, tmp_path: Path, reads: list[str]
) -> None:
    """Mirror roots listed instead of their index files: the same parts, taken when the
    index's digest is known (by its status) and is the one its `.hash` names; a `.hash`
    naming other bytes is read and refused, as a full build refuses it."""
    _list_mirror_roots(sources)
    out = tmp_path / "ix"
    first = _build(sources, out)
    assert {len(names) for names in _parts_named(first.folder).values()} == {4}
    changed, other = [p for p in _index_files(sources, "v0.22") if "root" not in p.parts][:2]
    _add_a_dependency_flag(changed)
    _hash_again(changed)
    reads.clear()
    again = _build(sources, out)
    assert again.reused == ["develop"] and again.parts_taken == 3
    assert {r for r in reads if r.endswith("index.json")} == {str(changed)}
    full = _build(sources, tmp_path / "full", full=True)
    assert _tag_files(again.folder) == _tag_files(full.folder)

    _hash_again(other, "0" * 64)
    reads.clear()
    last = _build(sources, out)
    assert last.parts_taken == 3  # the other three
    assert {r for r in reads if r.endswith("index.json")} == {str(other)}
    refused = _build(sources, tmp_path / "refused", full=True)
    assert [p.message for p in last.problems] == [p.message for p in refused.problems]
    assert any("checksum mismatch" in p.message for p in last.problems)
    assert _tag_files(last.folder) == _tag_files(refused.folder)


def _list_v3_mirrors(sources: Path, name: str, views: bool = False) -> dict[Path, Path]:
    """Each stack's index written again as a layout v3 mirror of its own, beside it (with
    `views`, a view of half its binaries), and the listing naming these mirrors by their
    roots (`name` "root") or their index manifests ("manifest"); returns each mirror's
    root by the index it was written from."""
    listing = json.loads((sources / "listing.json").read_text())
    mirrors = {}
    for entries in listing.values():
        for entry in entries:
            index = sources / entry["url"]
            root = mirrors[index] = index.parent.parent / "v3-mirror"
            installs = json.loads(index.read_text())["database"]["installs"]
            held = sorted(h for h, record in installs.items() if record["in_buildcache"])
            mirror = mb.write_v3_mirror(index, root, views={"half": held[::2]} if views else None)
            named = root if name == "root" else mirror.index_manifest
            entry["url"] = named.relative_to(sources).as_posix()
    (sources / "listing.json").write_text(json.dumps(listing))
    return mirrors


@pytest.mark.parametrize("name", ["root", "manifest"])
def test_a_tag_of_v3_mirrors_takes_its_unchanged_index_blobs_from_parts(
    sources: Path, tmp_path: Path, reads: list[str], name: str
) -> None:
    """v3 mirrors listed by their roots or index manifests: an unchanged local blob is
    known by its status, as a listed blob is, and taken from its part without being read;
    a blob rewritten or gone since is read, and refused or missed as a full build does."""
    mirrors = _list_v3_mirrors(sources, name)
    out = tmp_path / "ix"
    first = _build(sources, out)
    named = _parts_named(first.folder).values()
    assert {len([n for n in names if "-sizes-" not in n]) for names in named} == {4}
    # Only mirrors listed by their roots have their spec manifests read, and kept.
    assert {len([n for n in names if "-sizes-" in n]) for names in named} == {
        4 if name == "root" else 0
    }
    stacks = [p for p in _index_files(sources, "v0.22") if "root" not in p.parts]
    _add_a_dependency_flag(stacks[0])
    new_blob = mb.write_v3_mirror(stacks[0], mirrors[stacks[0]]).index_blob
    reads.clear()
    again = _build(sources, out)
    assert again.reused == ["develop"] and again.parts_taken == 3
    # Read once: its manifest changed, so its fingerprint is not made by hashing it first.
    assert [r for r in reads if "/blobs/" in r and "spec" not in r] == [str(new_blob)]
    full = _build(sources, tmp_path / "full", full=True)
    assert _tag_files(again.folder) == _tag_files(full.folder)
    assert again.problems == full.problems
    reads.clear()
    assert _build(sources, out).reused == ["develop", "v0.22"]  # by the blobs' statuses
    assert not [r for r in reads if "/blobs/" in r]
    # A manifest written again (signed again) naming the same blob: the blob's part.
    manifest = mirrors[stacks[0]] / "v3" / "manifests" / "index" / "index.manifest.json"
    manifest.write_bytes(manifest.read_bytes() + b"\n\n")
    reads.clear()
    assert _build(sources, out).parts_taken == 4
    assert not [r for r in reads if "/blobs/" in r]
    assert _build(sources, out, full=True).parts_taken == 0

    _damage_index(mb.write_v3_mirror(stacks[1], mirrors[stacks[1]]).index_blob)
    gone = mb.write_v3_mirror(stacks[2], mirrors[stacks[2]]).index_blob
    gone.unlink()
    last = _build(sources, out)
    assert last.parts_taken == 1  # the root's
    refused = _build(sources, tmp_path / "refused", full=True)
    assert [p.message for p in last.problems] == [p.message for p in refused.problems]
    assert any("checksum mismatch" in p.message for p in last.problems), last.problems
    assert any(str(mirrors[stacks[2]]) in p.path for p in last.problems), last.problems
    assert _tag_files(last.folder) == _tag_files(refused.folder)


def _spec_manifests(root: Path) -> list[Path]:
    return sorted((root / "v3" / "manifests" / "spec").rglob("*.spec.manifest.json"))


def _resize(manifest: Path, size: int) -> None:
    """The tarball size a spec manifest gives, made another (the file written again)."""
    document = json.loads(manifest.read_text())
    for record in document["data"]:
        if record["mediaType"].startswith("application/vnd.spack.install."):
            record["contentLength"] = size
    manifest.write_text(json.dumps(document))


def _manifests_read(reads: list[str]) -> set[Path] | None:
    """The spec manifests read in this process (None where a reader process read them)."""
    if tarball_sizes.PROCESS_FROM == 0:
        return None
    return {Path(r) for r in reads if r.endswith(".spec.manifest.json")}


@pytest.mark.parametrize("shape", ["in process", "views, a reader process"])
def test_a_tag_of_v3_mirrors_takes_its_unchanged_spec_manifests_from_parts(
    sources: Path, tmp_path: Path, reads: list[str], shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A v3 mirror's tarball sizes are kept as read, by its spec manifests' names, sizes
    and times: a tag read again reads only the manifests of the mirrors that moved, and
    gives the files a full build gives; a part damaged or gone means they are read."""
    views = shape != "in process"
    if views:  # read by a process of their own, as from 20,000 manifests
        monkeypatch.setattr(tarball_sizes, "PROCESS_FROM", 0)
    mirrors = _list_v3_mirrors(sources, "root", views)
    out = tmp_path / "ix"
    first = _build(sources, out)
    assert first.sizes_taken == 0
    stacks = [p for p in _index_files(sources, "v0.22") if "root" not in p.parts]
    # An index changed, its manifests not: every mirror's sizes are taken.
    _add_a_dependency_flag(stacks[0])
    changed = mirrors[stacks[0]]
    mb.write_index_manifest(changed, stacks[0].read_bytes(), (8,), False)
    reads.clear()
    again = _build(sources, out)
    assert again.reused == ["develop"] and again.sizes_taken == 4, again.summary()
    assert "and 3 indexes and 4 mirrors' spec manifests and 1 text index as read before" in (
        again.summary()
    )
    assert _manifests_read(reads) in (None, set())
    assert again.helper_rss_mb == 0  # no reader process started either
    full = _build(sources, tmp_path / "full", full=True)
    assert _tag_files(again.folder) == _tag_files(full.folder)
    assert again.problems == full.problems
    if views:
        assert any(b"half" in data for data in _tag_files(again.folder).values()), "no view"

    # The mirror written again, its manifests too: only theirs are read.
    _add_a_dependency_flag(stacks[0])
    mb.write_v3_mirror(stacks[0], changed, views={"half": []} if views else None)
    reads.clear()
    again = _build(sources, out)
    assert again.sizes_taken == 3, again.summary()
    assert _manifests_read(reads) in (None, set(_spec_manifests(changed)))
    assert (again.helper_rss_mb > 0) is views  # that mirror's, in a process of its own
    full = _build(sources, tmp_path / "full-rewritten", full=True)
    assert _tag_files(again.folder) == _tag_files(full.folder)
    assert again.problems == full.problems

    # A manifest of a mirror whose index did not move: its size is read again, theirs not.
    other = mirrors[stacks[1]]
    resized, broken = _spec_manifests(other)[:2]
    _resize(resized, 123_456_789)
    broken.write_text("{ not json")
    reads.clear()
    last = _build(sources, out)
    assert last.sizes_taken == 3 and last.parts_taken == 4
    assert _manifests_read(reads) in (None, set(_spec_manifests(other)))
    full = _build(sources, tmp_path / "full-again", full=True)
    assert _tag_files(last.folder) == _tag_files(full.folder)
    assert last.problems == full.problems
    assert any(p.path == str(broken) for p in last.problems), last.problems
    size = (123_456_789).to_bytes(8, "little")  # size.npy: int64, little-endian here
    assert any(size in data for name, data in _tag_files(last.folder).items() if "size" in name)

    # The sizes parts damaged or removed: the manifests are read, and the parts written.
    parts = sorted(out.with_name("ix.parts").glob("*-sizes-*"))
    for n, part in enumerate(parts):
        if n % 2:
            part.unlink()
        else:
            part.write_bytes(part.read_bytes()[:-1])
    _resize(resized, 7)
    damaged = _build(sources, out)
    assert damaged.sizes_taken == 0
    full = _build(sources, tmp_path / "full-damaged", full=True)
    assert _tag_files(damaged.folder) == _tag_files(full.folder)
    _resize(resized, 8)
    assert _build(sources, out).sizes_taken == 3


def test_the_closing_line_counts_each_mirror_taken_once_and_only_once_it_is_read(
    sources: Path, tmp_path: Path
) -> None:
    """A mirror a tag lists twice counts once among the indexes and spec manifests taken
    as read before; one whose index then cannot be read counts not at all (its sizes part
    was taken before its index was asked for)."""
    mirrors = _list_v3_mirrors(sources, "root")
    listing = json.loads((sources / "listing.json").read_text())
    stacks = [p for p in _index_files(sources, "v0.22") if "root" not in p.parts]
    twice = next(e for e in listing["v0.22"] if "v3-mirror" in e["url"] and "root" not in e["url"])
    listing["v0.22"].append(dict(twice))
    (sources / "listing.json").write_text(json.dumps(listing))
    out = tmp_path / "ix"
    _build(sources, out)
    listed = {mirrors[index].as_posix() for index in stacks} & {
        (sources / e["url"]).as_posix() for e in listing["v0.22"]
    }
    changed = next(index for index in stacks if (sources / twice["url"]) != mirrors[index])
    _add_a_dependency_flag(changed)
    mb.write_index_manifest(mirrors[changed], changed.read_bytes(), (8,), False)
    again = _build(sources, out)
    assert again.reused == ["develop"], again.summary()
    assert (again.parts_taken, again.sizes_taken) == (3, 4), again.summary()
    assert "and 3 indexes and 4 mirrors' spec manifests and 1 text index as read before" in (
        again.summary()
    )
    assert len(listed) == 3 and len(listing["v0.22"]) == 5

    # Another stack's index blob damaged (its size kept) and its part gone: its spec
    # manifests' part is taken, then its index cannot be read, and the mirror counts not.
    lost = next(i for i in stacks if i != changed and (sources / twice["url"]) != mirrors[i])
    checksum = hashlib.sha256(lost.read_bytes()).hexdigest()
    blob = mb.blob_path(mirrors[lost], checksum)
    blob.write_bytes(b" " * blob.stat().st_size)
    for part in out.with_name("ix.parts").glob(f"*-{checksum}.part"):
        part.unlink()
    last = _build(sources, out)
    assert any("checksum" in p.message for p in last.problems), last.problems
    assert (last.parts_taken, last.sizes_taken) == (3, 3), last.summary()


def test_spec_manifests_moved_unseen_or_not_listed_are_read_as_a_full_build_reads_them(
    sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a sizes part must not hide: a manifest written again to the same size with its
    time set back (its status's change time moved), a folder of manifests that cannot be
    listed (a problem, every build), a size no file can have (a problem, not a crash)."""
    mirrors = _list_v3_mirrors(sources, "root")
    out = tmp_path / "ix"
    _build(sources, out)
    stacks = [p for p in _index_files(sources, "v0.22") if "root" not in p.parts]
    manifest = _spec_manifests(mirrors[stacks[0]])[0]
    status, data = manifest.stat(), manifest.read_bytes()
    digits = str(DEFAULT_TARBALL_SIZE).encode()
    assert data.count(digits) == 1
    manifest.write_bytes(data.replace(digits, str(DEFAULT_TARBALL_SIZE + 1).encode()))
    os.utime(manifest, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert manifest.stat().st_size == status.st_size
    again = _build(sources, out)
    assert again.reused == ["develop"] and again.sizes_taken == 3, again.summary()
    size = (DEFAULT_TARBALL_SIZE + 1).to_bytes(8, "little")
    assert any(size in data for name, data in _tag_files(again.folder).items() if "size" in name)

    _resize(_spec_manifests(mirrors[stacks[1]])[0], 1 << 63)
    # A package's folder of manifests added, that this user may not list: its manifests'
    # names are not seen, so the others' stock alone is the one the last build kept.
    first = _spec_manifests(mirrors[stacks[2]])[0]
    hidden = first.parent.with_name("zzz-added")
    hidden.mkdir()
    shutil.copy(first, hidden / first.name.replace(first.parent.name, "zzz-added"))
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if str(path) == str(hidden):  # as a folder this user may not list
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    builds = [_build(sources, out), _build(sources, out)]
    full = _build(sources, tmp_path / "full", full=True)
    for build in builds:
        assert build.reused == ["develop"], build.summary()  # v0.22 read again, each time
        assert build.problems == full.problems
        assert _tag_files(build.folder) == _tag_files(full.folder)
    messages = [p.message for p in full.problems]
    assert any("cannot be listed" in m for m in messages), messages
    assert any("tarball size" in m and "9223372036854775808" in m for m in messages), messages


def _damage_index(blob: Path) -> None:
    """Other bytes under the blob's name: one binary's flag made null."""
    data = blob.read_bytes().replace(b'"in_buildcache":true', b'"in_buildcache":null', 1)
    blob.write_bytes(data)


def test_a_v3_blob_is_taken_from_a_part_for_its_own_bytes_only(
    sources: Path, tmp_path: Path
) -> None:
    """Two local v3 mirrors whose manifests name the same blob, the second's holding other
    bytes: in either order, built once or again, the second is read and refused, never
    given the first's part. Over http, a blob is known by its manifest alone: no part."""
    _list_v3_mirrors(sources, "root")
    listing = json.loads((sources / "listing.json").read_text())
    entry = listing["v0.22"][1]
    twin = sources / "v0.22" / "twin"
    shutil.copytree(sources / entry["url"], twin)
    manifest = json.loads((twin / "v3" / "manifests" / "index" / "index.manifest.json").read_text())
    checksum = manifest["data"][0]["checksum"]
    _damage_index(twin / "blobs" / "sha256" / checksum[:2] / checksum)
    twin_entry = {"label": "twin", "url": "v0.22/twin"}
    others = [e for e in listing["v0.22"] if e != entry]
    for n, pair in enumerate([[entry, twin_entry], [twin_entry, entry]]):
        (sources / "listing.json").write_text(json.dumps({**listing, "v0.22": others + pair}))
        for build in (_build(sources, tmp_path / f"ix{n}"), _build(sources, tmp_path / f"ix{n}")):
            [refused] = [p for p in build.problems if "twin" in p.path]
            assert "checksum mismatch" in refused.message, refused
    with MirrorHTTPServer(sources) as http, HttpReader(tmp_path / "fetch") as reader:
        remote = build_index([http.url_for("listing.json")], tmp_path / "remote", reader=reader)
    assert remote.specs > 0 and _parts_named(remote.folder)["v0.22"] == []


def test_remote_v2_mirror_roots_with_a_hash_keep_no_part(sources: Path, tmp_path: Path) -> None:
    """Over http, a v2 mirror root's index is known by its `.hash` alone, not by its
    bytes: a part of it would never be taken, so none is written."""
    _list_mirror_roots(sources)
    with MirrorHTTPServer(sources) as http, HttpReader(tmp_path / "fetch") as reader:
        first = build_index([http.url_for("listing.json")], tmp_path / "ix", reader=reader)
    assert first.specs > 0 and first.caches == 8
    assert _parts_named(first.folder) == {"develop": [], "v0.22": []}


@pytest.mark.parametrize("damage", ["cut short", "removed"])
def test_a_damaged_or_missing_part_means_the_index_is_read(
    sources: Path, tmp_path: Path, reads: list[str], damage: str
) -> None:
    out = tmp_path / "ix"
    first = _build(sources, out)
    root = next(p for p in _index_files(sources, "v0.22") if "root" in p.parts)
    changed = next(p for p in _index_files(sources, "v0.22") if "root" not in p.parts)
    _add_a_dependency_flag(changed)
    for name in _parts_named(first.folder)["v0.22"]:
        part = out.with_name("ix.parts") / name
        if damage == "removed":
            part.unlink()
        else:
            part.write_bytes(part.read_bytes()[:-1])
    reads.clear()
    again = _build(sources, out)
    assert again.parts_taken == 0
    assert str(changed) in reads and str(root) in reads  # no part taken: both read
    full = _build(sources, tmp_path / "full", full=True)
    assert _tag_files(again.folder) == _tag_files(full.folder)
    # Written again, sound: the next build takes them.
    _add_a_dependency_flag(changed)
    assert _build(sources, out).parts_taken == 3


def test_a_lone_cache_keeps_no_part(sources: Path, tmp_path: Path) -> None:
    """A tag of one cache that did not change is reused whole: a part would never be
    taken."""
    listing = json.loads((sources / "listing.json").read_text())
    (sources / "listing.json").write_text(json.dumps({t: e[:1] for t, e in listing.items()}))
    report = _build(sources, tmp_path / "ix")
    assert report.specs > 0
    assert _parts_named(report.folder) == {"develop": [], "v0.22": []}
    assert not tmp_path.joinpath("ix.parts").exists()


def test_remote_indexes_are_taken_from_parts_once_revalidated(
    sources: Path, tmp_path: Path
) -> None:
    """Over http, the unchanged indexes of a tag read again are revalidated (304) and
    taken from their parts; only the changed one is downloaded and read."""
    out = tmp_path / "ix"
    with MirrorHTTPServer(sources) as http, HttpReader(tmp_path / "fetch") as reader:
        listing = http.url_for("listing.json")
        build_index([listing], out, reader=reader)
        changed = next(p for p in _index_files(sources, "v0.22") if "root" not in p.parts)
        _add_a_dependency_flag(changed)
        http.clear_log()
        again = build_index([listing], out, reader=reader)
        assert again.reused == ["develop"] and again.parts_taken == 3
        fetched = [e for e in http.requests("/", method="GET") if e.path.endswith("index.json")]
        downloaded = {e.path for e in fetched if e.status == 200}
        assert downloaded == {"/" + changed.relative_to(sources).as_posix()}
        full = build_index([listing], tmp_path / "full", reader=reader, full=True)
        assert _tag_files(again.folder) == _tag_files(full.folder)


def test_parts_that_cannot_be_written_are_left_out(sources: Path, tmp_path: Path) -> None:
    """A part only saves time: where none can be written, the build goes on without."""
    tmp_path.joinpath("ix.parts").write_text("a file where the folder would be")
    report = _build(sources, tmp_path / "ix")
    assert report.specs > 0 and report.caches == 8
    assert _parts_named(report.folder) == {"develop": [], "v0.22": []}
    assert tmp_path.joinpath("ix.parts").read_text() == "a file where the folder would be"


def test_parts_are_not_taken_under_other_limits(sources: Path, tmp_path: Path) -> None:
    """Parts kept within the default limits are not taken under others: over http, where
    the root index is over `--max-source-bytes`, the build skips it as a full one does."""
    out = tmp_path / "ix"
    root = next(p for p in _index_files(sources, "v0.22") if "root" in p.parts)
    limits = SourceLimits(max_bytes=root.stat().st_size - 1)
    with MirrorHTTPServer(sources) as http:
        listing = http.url_for("listing.json")
        with HttpReader(tmp_path / "fetch") as reader:
            build_index([listing], out, reader=reader)
        _add_a_dependency_flag(next(p for p in _index_files(sources, "v0.22") if p != root))
        # The same download cache: a body fetched before is sized again on a 304.
        with HttpReader(tmp_path / "fetch", limits=limits) as reader:
            again = build_index([listing], out, reader=reader, limits=limits)
            full = build_index([listing], tmp_path / "f", reader=reader, limits=limits, full=True)
    assert again.parts_taken == 0
    root_url = http.url_for(root.relative_to(sources).as_posix())
    assert any(p.path == root_url and "max-source-bytes" in p.message for p in again.problems)
    assert [str(p) for p in again.problems] == [str(p) for p in full.problems]
    assert _tag_files(again.folder) == _tag_files(full.folder)


def test_caches_read_in_another_order_rewrite_their_parts(sources: Path, tmp_path: Path) -> None:
    """The root listed last: the stacks' parts (whose records were the root's) are not
    taken, the indexes are read and their parts written again for the new order."""
    out = tmp_path / "ix"
    _build(sources, out)
    listing = json.loads((sources / "listing.json").read_text())
    listing["v0.22"].append(listing["v0.22"].pop(0))  # root last
    (sources / "listing.json").write_text(json.dumps(listing))
    reordered = _build(sources, out)
    assert reordered.reused == ["develop"] and reordered.parts_taken == 1  # the root's
    _add_a_dependency_flag(next(p for p in _index_files(sources, "v0.22") if "root" in p.parts))
    again = _build(sources, out)
    assert again.parts_taken == 3
    full = _build(sources, tmp_path / "full", full=True)
    assert _tag_files(again.folder) == _tag_files(full.folder)


def test_an_index_listed_twice_and_changed_between_its_reads(
    sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each read's part is named by what that read found: the first read's nodes are never
    kept under the second read's digest."""
    listing = json.loads((sources / "listing.json").read_text())
    stack = listing["v0.22"][1]
    listing["v0.22"].append({"label": "again", "url": stack["url"]})
    (sources / "listing.json").write_text(json.dumps(listing))
    index = sources / stack["url"]
    real, opened = files.read_regular_status, []

    def changed_after_its_first_read(path: Path, *args: Any, **kwargs: Any) -> Any:
        found = real(path, *args, **kwargs)
        if Path(path) == index:
            opened.append(path)
            if len(opened) == 1:
                _add_a_dependency_flag(index)
        return found

    monkeypatch.setattr(recording, "read_regular_status", changed_after_its_first_read)
    out = tmp_path / "ix"
    _build(sources, out)
    monkeypatch.setattr(recording, "read_regular_status", real)
    assert len(opened) == 2
    root = next(p for p in _index_files(sources, "v0.22") if "root" in p.parts)
    _add_a_dependency_flag(root)  # the tag is read again, the stack taken from its part
    again = _build(sources, out)
    assert again.parts_taken >= 1
    full = _build(sources, tmp_path / "full", full=True)
    assert _tag_files(again.folder) == _tag_files(full.folder)


def test_a_rebuild_from_parts_records_what_a_full_build_records(
    sources: Path, tmp_path: Path
) -> None:
    """The fingerprints, counts and problems of its manifest; and the build after it
    reuses every tag."""
    out = tmp_path / "ix"
    _build(sources, out)
    _add_a_dependency_flag(next(p for p in _index_files(sources, "v0.22") if "root" not in p.parts))
    again = _build(sources, out)
    assert again.parts_taken == 3
    full = _build(sources, tmp_path / "full", full=True)

    def entries(build: Path) -> list[dict[str, Any]]:
        tags = json.loads((build / "manifest.json").read_text())["tags"]
        return [{k: v for k, v in t.items() if k != "file_digests"} for t in tags]

    assert entries(again.folder) == entries(full.folder)
    assert _build(sources, out).reused == list(TAGS)


def test_strict_fails_on_a_problem_a_part_carries(sources: Path, tmp_path: Path) -> None:
    """A record the root index cannot give (no arch) is a problem kept in its part:
    taken from it, `--strict` fails on it as reading the index does (the first problem
    of tag v0.22, the only one listed)."""
    listing = json.loads((sources / "listing.json").read_text())
    (sources / "listing.json").write_text(json.dumps({"v0.22": listing["v0.22"]}))
    root = next(p for p in _index_files(sources, "v0.22") if "root" in p.parts)
    document = json.loads(root.read_text())
    digest = sorted(document["database"]["installs"])[0]
    del document["database"]["installs"][digest]["spec"]["arch"]
    root.write_text(json.dumps(document, separators=(",", ":")))
    out = tmp_path / "ix"
    first = _build(sources, out)
    assert any(digest in p.message for p in first.problems)
    _add_a_dependency_flag(next(p for p in _index_files(sources, "v0.22") if p != root))
    with pytest.raises(StrictModeError, match=digest):
        _build(sources, out, strict=True)
    again = _build(sources, out)
    assert again.parts_taken == 3
    assert [str(p) for p in again.problems] == [str(p) for p in first.problems]
