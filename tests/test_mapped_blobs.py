"""A large local index blob is mapped and read a span at a time (index/ingest/files.py,
`map_regular`): the build it gives is the build of the blob read whole, and a blob whose
checksum does not match is the same problem either way.

The threshold and the spans are lowered for the test (a real blob of 64 MB would take
minutes to generate): every blob of a small generated v3 mirror is then mapped, its
pages dropped every few KB, and its last record found through tails grown several times.
"""

from __future__ import annotations

import hashlib
import mmap
import shutil
from pathlib import Path

import pytest

from cachegql.demo import MirrorConfig, MirrorSummary, write_mirror
from cachegql.index import build_index
from cachegql.index.build import BuildReport
from cachegql.index.ingest import files, spackdb
from cachegql.index.ingest.locations import Location, Opener

CONFIG = MirrorConfig(specs=300, packages=40, stacks=3, seed=11, dangling=3)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> MirrorSummary:
    return write_mirror(CONFIG, tmp_path_factory.mktemp("mapped"))


def _mapped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "_MAP_FROM", 0)
    monkeypatch.setattr(files, "_SPAN", 4096)
    monkeypatch.setattr(spackdb, "_RELEASE_SPAN", 4096)


def _files(build: Path) -> dict[str, bytes]:
    """Every file of a build but its manifest and text index (whoosh's random names)."""
    return {
        path.relative_to(build).as_posix(): path.read_bytes()
        for path in sorted(build.rglob("*"))
        if path.is_file() and path.name != "manifest.json" and "text" not in path.parts
    }


def _build(mirror: Path, out: Path) -> BuildReport:
    return build_index([mirror], out, tag="develop")


def test_a_mapped_blob_builds_what_a_blob_read_whole_does(
    written: MirrorSummary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = _build(written.mirror, tmp_path / "whole")
    _mapped(monkeypatch)
    mapped = _build(written.mirror, tmp_path / "mapped")
    assert mapped.specs == whole.specs == CONFIG.specs
    assert [str(p) for p in mapped.problems] == [str(p) for p in whole.problems]
    assert _files(mapped.folder) == _files(whole.folder)
    assert len(_files(mapped.folder)) > 100


def test_a_mapped_blob_that_does_not_match_its_checksum_is_refused_alike(
    written: MirrorSummary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second largest blob: a view's index (the largest, the root's, would leave no specs).
    blobs = sorted((written.mirror / "blobs").rglob("*"), key=lambda p: p.stat().st_size)
    changed = Path(shutil.copytree(written.mirror, tmp_path / "changed"))
    target = changed / blobs[-2].relative_to(written.mirror)
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 1  # same size, other bytes
    target.write_bytes(bytes(data))
    whole = [str(p) for p in _build(changed, tmp_path / "whole").problems]
    _mapped(monkeypatch)
    mapped = [str(p) for p in _build(changed, tmp_path / "mapped").problems]
    assert mapped == whole
    assert any("checksum mismatch" in p for p in mapped), mapped


def test_only_a_file_named_by_its_digest_is_mapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blob (named by its sha256) is never rewritten in place, so it may be mapped; a
    v2 `index.json` may be copied over in place by `spack buildcache update-index` while
    a build reads it (a mapped file cut short stops the build with SIGBUS), so it is read
    whole, and what is parsed is what was verified."""
    _mapped(monkeypatch)
    content = b'{"database": {"version": "8", "installs": {}}}'
    digest = hashlib.sha256(content).hexdigest()
    blob = tmp_path / "blobs" / "sha256" / digest[:2] / digest
    blob.parent.mkdir(parents=True)
    blob.write_bytes(content)
    index = tmp_path / "build_cache" / "index.json"
    index.parent.mkdir()
    index.write_bytes(content)
    opener = Opener()
    mapped = opener.read_verified(Location.of(blob), digest)
    assert isinstance(mapped, mmap.mmap) and mapped[:] == content
    mapped.close()
    read = opener.read_verified(Location.of(index), digest)
    assert isinstance(read, bytes) and read == content
