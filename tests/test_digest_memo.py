"""Local files known by their status (index/ingest/digest_memo.py): a rebuild does not
hash again a local index whose status is the one its digest was recorded with, and does
hash one whose content changed, however its size and modification time were kept.

Real generated build caches and real builds on disk. The files a test writes are seconds
old, not settled (`SETTLED_NS`): tests that need them recorded shorten the window.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cachegql.index import build_index
from cachegql.index.ingest import digest_memo, files
from cachegql.index.ingest.digest_memo import settled_status, status_of
from cachegql.index.ingest.identity import RecordingOpener
from cachegql.index.ingest.locations import Location, Opener, ReadError
from tests.mirror_builder import write_listed_tags

TAGS = ("develop", "v0.22")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tags of a root and two stacks each, and a listing naming their index files."""
    root = tmp_path_factory.mktemp("memo-sources")
    return write_listed_tags(root, TAGS, specs=60, packages=12, stacks=2, first_seed=40)


@pytest.fixture
def sources(generated: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(generated, tmp_path / "src"))


@pytest.fixture
def settled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_memo, "SETTLED_NS", 0)


def _index_files(sources: Path) -> list[Path]:
    return sorted(sources.rglob("index.json"))


def _digests(out: Path) -> dict[str, Any]:
    manifest = json.loads((out / "manifest.json").read_text())
    return {entry["name"]: entry["file_digests"] for entry in manifest["tags"]}


def _build(sources: Path, out: Path, **options: Any) -> Any:
    return build_index([sources / "listing.json"], out, **options)


@pytest.mark.usefixtures("settled_at_once")
def test_a_build_records_each_local_index_by_its_status(sources: Path, tmp_path: Path) -> None:
    _build(sources, tmp_path / "ix")
    recorded = {p: e for files in _digests(tmp_path / "ix").values() for p, e in files.items()}
    assert sorted(recorded) == [str(p) for p in _index_files(sources)]
    for path, (*status, sha256) in recorded.items():
        assert tuple(status) == status_of(path)
        assert sha256 == hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.usefixtures("settled_at_once")
def test_an_unchanged_index_is_not_read_again(
    sources: Path, tmp_path: Path, reads: list[str]
) -> None:
    out = tmp_path / "ix"
    first = _build(sources, out)
    recorded = _digests(first.folder)
    reads.clear()
    again = _build(sources, out)
    assert again.reused == list(TAGS)
    assert [r for r in reads if r.endswith("index.json")] == []
    # What was known is recorded again, for the build after, which reads nothing either.
    assert _digests(again.folder) == recorded
    third = _build(sources, out)
    assert third.reused == list(TAGS) and third.folder != again.folder
    assert [r for r in reads if r.endswith("index.json")] == []


def _rewrite_keeping_size_and_time(index: Path) -> None:
    """A change of content that neither size nor modification time shows (as `cp -p`
    or `rsync -t` of a same-sized file leave it): one record's count."""
    before = index.stat()
    data = index.read_bytes()
    assert b'"ref_count":1,' in data
    changed = data.replace(b'"ref_count":1,', b'"ref_count":2,', 1)
    for _ in range(200):  # until the change time is past the clock's tick (a few ms)
        time.sleep(0.005)
        index.write_bytes(changed)
        os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = index.stat()
        if after.st_ctime_ns != before.st_ctime_ns:
            break
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert after.st_ctime_ns != before.st_ctime_ns


@pytest.mark.usefixtures("settled_at_once")
def test_a_rewritten_index_is_read_again_though_its_size_and_time_are_kept(
    sources: Path, tmp_path: Path, reads: list[str]
) -> None:
    out = tmp_path / "ix"
    _build(sources, out)
    changed = next(p for p in _index_files(sources / "v0.22") if "stacks" in p.parts)
    _rewrite_keeping_size_and_time(changed)
    reads.clear()
    again = _build(sources, out)
    assert again.reused == ["develop"]
    recorded = _digests(again.folder)["v0.22"][str(changed)]
    assert recorded[-1] == hashlib.sha256(changed.read_bytes()).hexdigest()
    # develop's indexes were known by status; of v0.22's, the changed one was read, the
    # others (known by status) taken from the parts the first build kept of them.
    read = {r for r in reads if r.endswith("index.json")}
    assert read == {str(changed)}


def test_files_written_just_before_the_build_are_not_recorded(
    sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seconds old, their status could still be that of another content written in the
    same tick of the file system's clock: hashed again next time, not trusted."""
    monkeypatch.setattr(digest_memo, "SETTLED_NS", 3600 * 10**9)  # however slow the run
    out = tmp_path / "ix"
    _build(sources, out)
    assert _digests(out) == {"develop": {}, "v0.22": {}}
    assert _build(sources, out).reused == list(TAGS)


def test_a_status_stands_only_if_it_stood_still() -> None:
    now = time.time_ns()
    old = (1, 2, 3, now - 10 * 10**9, now - 10 * 10**9)
    assert settled_status(old, old, now) == old
    assert settled_status(old, (*old[:2], 4, *old[3:]), now) is None  # grew while read
    assert settled_status(None, old, now) is None  # could not be looked at
    changed_just_before = (1, 2, 3, now - 10 * 10**9, now - 10**9)
    assert settled_status(changed_just_before, changed_just_before, now) is None


@pytest.mark.usefixtures("settled_at_once")
def test_a_digest_is_taken_from_the_record_only_for_the_status_recorded(
    tmp_path: Path, reads: list[str]
) -> None:
    index = tmp_path / "index.json"
    index.write_text("{}")
    location = Location.of(index)
    status = status_of(str(index))
    assert status is not None
    stand_in = "0" * 64  # not the file's: only the record can give it
    known = RecordingOpener(Opener(), {location.text: (status, stand_in)})
    assert known.digest(location) == stand_in and reads == []
    assert known.recorded() == {location.text: (status, stand_in)}
    grown = (status[0], status[1], status[2] + 1, status[3], status[4])
    other = RecordingOpener(Opener(), {location.text: (grown, stand_in)})
    assert other.digest(location) == hashlib.sha256(b"{}").hexdigest()
    assert reads == [str(index)]


class _SwappingOpener(RecordingOpener):
    """The link read made to name another file for the read, and the first one again
    after it (whose status that does not change); read whole, or hashed for a digest."""

    def _read_file(self, path: Path) -> bytes:
        with _swapped(path):
            return super()._read_file(path)

    def _hash_path(self, path: Path) -> str:
        with _swapped(path):
            return super()._hash_path(path)


@contextlib.contextmanager
def _swapped(path: Path) -> Iterator[None]:
    first, link = path.readlink(), path.with_name("link")
    link.symlink_to("other.json")
    link.replace(path)
    try:
        yield
    finally:
        link.symlink_to(first)
        link.replace(path)


@pytest.mark.usefixtures("settled_at_once")
def test_only_the_status_of_the_file_read_and_asked_for_is_recorded(tmp_path: Path) -> None:
    index = tmp_path / "index.json"
    index.write_text("{}")
    location = Location.of(index)
    opener = RecordingOpener(Opener())
    opener.read(location)
    assert opener.recorded() == {}  # read, but no fingerprint asked for its digest
    assert opener.digest(location) == hashlib.sha256(b"{}").hexdigest()
    status = status_of(str(index))
    assert status is not None
    assert opener.recorded() == {location.text: (status, hashlib.sha256(b"{}").hexdigest())}
    (tmp_path / "other.json").write_bytes(b'{"other": 1}')
    (tmp_path / "first.json").write_text("{}")
    linked = Location.of(tmp_path / "linked.json")
    linked.path.symlink_to("first.json")
    status = status_of(str(linked.path))
    swapped = _SwappingOpener(Opener())
    assert swapped.digest(linked) == hashlib.sha256(b'{"other": 1}').hexdigest()
    assert status_of(str(linked.path)) == status
    # The path's status is as before and after, but the bytes read were another file's.
    assert swapped.recorded() == {}


def test_a_digest_alone_is_hashed_as_read_and_refuses_what_is_not_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local file asked only for its digest is hashed as it is read (never mapped: cut
    short meanwhile, it gives other bytes, not SIGBUS); a named pipe is a failure, kept."""

    def no_mapping(*args: object) -> None:
        raise AssertionError("mapped")

    monkeypatch.setattr(files, "_MAP_FROM", 0)
    monkeypatch.setattr(mmap, "mmap", no_mapping)
    index = tmp_path / "index.json"
    index.write_bytes(b"{}" * (2 << 20))
    opener = RecordingOpener(Opener())
    assert opener.digest(Location.of(index)) == hashlib.sha256(index.read_bytes()).hexdigest()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for _ in range(2):  # the second from the failure kept, the pipe not opened again
        with pytest.raises(ReadError, match="not a regular file"):
            opener.digest(Location.of(fifo))


def test_a_frozen_opener_gives_small_bodies_as_the_ingest_read_them(tmp_path: Path) -> None:
    """Once the ingest is over, a fingerprint reads a manifest again as the ingest read
    it (a v3 manifest names the blob whose digest it asks), and nothing else."""
    manifest, other = tmp_path / "index.manifest.json", tmp_path / "other.json"
    manifest.write_text('{"data": []}')
    other.write_text("{}")
    opener = RecordingOpener(Opener())
    assert opener.read(Location.of(manifest)) == b'{"data": []}'
    manifest.write_text('{"data": [1]}')
    opener.frozen = True
    assert opener.read(Location.of(manifest)) == b'{"data": []}'
    with pytest.raises(ReadError, match="not read by the ingest"):
        opener.read(Location.of(other))
