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
from typing import Any

import pytest

from cachegql.demo import MirrorConfig, MirrorSummary, write_mirror
from cachegql.index import build_index
from cachegql.index.build import BuildError, BuildReport
from cachegql.index.ingest import files, spackdb
from cachegql.index.ingest.identity import RecordingOpener
from cachegql.index.ingest.locations import Location, Opener, ReadError
from tests import mirror_builder as mb

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


def _root_blob(mirror: Path, into: Path) -> Path:
    """A copy of `mirror` in `into`, and the blob of its root index (the largest blob)."""
    changed = Path(shutil.copytree(mirror, into))
    blobs = sorted((changed / "blobs").rglob("*"), key=lambda p: p.stat().st_size)
    return blobs[-1]


@pytest.mark.parametrize("mapped", [False, True], ids=["read whole", "mapped"])
def test_an_index_blob_parsed_beside_its_hash_stands_only_once_verified(
    written: MirrorSummary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mapped: bool
) -> None:
    """The root index is parsed while a thread hashes it (`Opener.read_verifying`): a
    blob that parses well but is not the one its manifest names gives no specs."""
    blob = _root_blob(written.mirror, tmp_path / "changed")
    data = blob.read_bytes()
    at = data.index(b'"version":"', len(data) // 2) + len(b'"version":"')
    assert data[at : at + 1].isdigit()
    blob.write_bytes(data[:at] + (b"7" if data[at : at + 1] != b"7" else b"6") + data[at + 1 :])
    monkeypatch.setattr(files, "_HASH_BESIDE_FROM", 0)  # hashed in a thread, however small
    if mapped:
        _mapped(monkeypatch)
    with pytest.raises(BuildError) as raised:
        _build(tmp_path / "changed", tmp_path / "ix")
    assert "checksum mismatch: expected sha256" in str(raised.value)
    assert not (tmp_path / "ix").exists()


def test_an_index_blob_that_breaks_its_parse_is_a_checksum_mismatch(
    written: MirrorSummary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes that are not the blob explain why they do not parse: the mismatch is the
    problem told, as when the blob was hashed before it was parsed."""
    blob = _root_blob(written.mirror, tmp_path / "changed")
    data = blob.read_bytes()
    at = data.index(b'"installs":{') + len(b'"installs":')
    blob.write_bytes(data[:at] + b"[" + data[at + 1 :])
    monkeypatch.setattr(files, "_HASH_BESIDE_FROM", 0)
    with pytest.raises(BuildError) as raised:
        _build(tmp_path / "changed", tmp_path / "ix")
    assert "checksum mismatch: expected sha256" in str(raised.value)
    assert "JSON" not in str(raised.value)


def test_read_verifying_gives_the_bytes_and_a_check_to_wait_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "_HASH_BESIDE_FROM", 0)
    content = b'{"database": {"version": "8", "installs": {}}}'
    digest = hashlib.sha256(content).hexdigest()
    blob = tmp_path / digest
    blob.write_bytes(content)
    data, check = Opener().read_verifying(Location.of(blob), digest)
    assert data == content
    check.wait()  # the bytes are the blob's: nothing raised
    blob.write_bytes(content.replace(b"8", b"7"))
    data, check = Opener().read_verifying(Location.of(blob), digest)
    assert b'"7"' in data  # given before verified ...
    with pytest.raises(ReadError, match="checksum mismatch"):
        check.wait()  # ... and refused once they are
    assert check.hashing is not None and check.hashing.done
    with pytest.raises(ReadError, match="checksum mismatch"):
        check.poll()  # the hash is found: a poll says so too
    other = tmp_path / "index.json"  # not named by its digest: read whole, never mapped
    other.write_bytes(content.replace(b"8", b"7"))
    data, check = Opener().read_verifying(Location.of(other), digest)
    assert isinstance(data, bytes) and b'"7"' in data
    with pytest.raises(ReadError, match="checksum mismatch"):
        check.wait()
    with pytest.raises(ReadError, match="checksum mismatch"):
        Opener().read_verified(Location.of(other), digest)


def test_a_large_body_read_for_a_fingerprint_is_hashed_beside(tmp_path: Path) -> None:
    """`RecordingOpener` hashes a body of 1 MB or more in a thread; its digest is the
    body's sha256 all the same, and a failed check is remembered as a failure."""
    index = tmp_path / "index.json"
    index.write_bytes(b"x" * (2 << 20))
    opener = RecordingOpener(Opener())
    assert opener.read(Location.of(index)) == index.read_bytes()
    assert opener.digest(Location.of(index)) == hashlib.sha256(index.read_bytes()).hexdigest()
    blob = tmp_path / ("0" * 64)
    blob.write_bytes(b"not the blob")
    _, check = opener.read_verifying(Location.of(blob), "0" * 64)
    with pytest.raises(ReadError):
        check.wait()
    with pytest.raises(ReadError, match="checksum mismatch"):
        opener.digest(Location.of(blob))


def test_a_v2_index_parsed_beside_its_hash_stands_only_once_verified(
    written: MirrorSummary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A v2 `index.json` with an `index.json.hash` is parsed while a thread hashes it:
    an index that parses well but is not the one its hash names gives no specs."""
    monkeypatch.setattr(files, "_HASH_BESIDE_FROM", 0)
    index = _root_blob(written.mirror, tmp_path / "v3").read_bytes()
    mb.write_v2_mirror(index, tmp_path / "mirror")
    assert _build(tmp_path / "mirror", tmp_path / "whole").specs == CONFIG.specs
    mb.corrupt_v2_hash(tmp_path / "mirror")
    with pytest.raises(BuildError) as raised:
        _build(tmp_path / "mirror", tmp_path / "ix")
    assert "checksum mismatch" in str(raised.value)


def test_a_hashed_v2_index_is_reused_by_its_verified_digest(
    written: MirrorSummary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest a verified read records is what the next build's fingerprint compares:
    a local v2 mirror with its `.hash`, unchanged, is reused."""
    monkeypatch.setattr(files, "_HASH_BESIDE_FROM", 0)
    mb.write_v2_mirror(_root_blob(written.mirror, tmp_path / "v3").read_bytes(), tmp_path / "m")
    first = _build(tmp_path / "m", tmp_path / "ix")
    again = _build(tmp_path / "m", tmp_path / "ix")
    assert (first.reused, again.reused) == ([], ["develop"])


def test_a_damaged_blob_is_never_parsed_whole_before_it_is_verified(
    written: MirrorSummary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blob cut short has no last record to end the scan: it would be parsed as one
    document (gigabytes of objects at 1M specs). The check is waited for first."""
    blob = _root_blob(written.mirror, tmp_path / "changed")
    blob.write_bytes(blob.read_bytes()[: blob.stat().st_size // 2])
    monkeypatch.setattr(files, "_HASH_BESIDE_FROM", 0)
    parsed_whole: list[int] = []
    real_json = spackdb._json

    def parse_whole(data: bytes, source: str) -> Any:
        parsed_whole.append(len(data))
        return real_json(data, source)

    monkeypatch.setattr(spackdb, "_json", parse_whole)
    with pytest.raises(BuildError, match="checksum mismatch"):
        _build(tmp_path / "changed", tmp_path / "ix")
    assert parsed_whole == []


def test_a_parse_stops_once_its_bytes_are_known_not_to_be_the_blob(
    written: MirrorSummary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check is polled as the parse drops pages: bytes that parse well but are not
    the blob stop the parse at the next poll once the hash is known, not at its end."""
    _mapped(monkeypatch)
    monkeypatch.setattr(files, "_HASH_BESIDE_FROM", 0)
    blob = _root_blob(written.mirror, tmp_path / "changed")
    data = blob.read_bytes()
    at = data.rindex(b'"version":"') + len(b'"version":"')
    blob.write_bytes(data[:at] + (b"7" if data[at : at + 1] != b"7" else b"6") + data[at + 1 :])
    read, check = Opener().read_verifying(Location.of(blob), blob.name)
    assert check.hashing is not None
    check.hashing.result()  # known before the parse starts
    with pytest.raises(ReadError, match="checksum mismatch"):
        spackdb.read_database(read, str(blob), None, check)
    read_whole, _ = Opener().read_verifying(Location.of(blob), blob.name)
    assert len(spackdb.read_database(read_whole, str(blob)).nodes) > 0  # unchecked: it parses
