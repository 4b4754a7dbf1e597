"""Tarball sizes read by a process of their own give what reading them here gives.

The ingest of a large v3 mirror reads its spec manifests in a second process while it
parses the index (`PendingSizes`); these tests lower the threshold to 1 so that a small
generated mirror takes that path, and compare it with reading in this process, with a
broken manifest, a process that dies, and a build that stops.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import shutil
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index import BuildReport
from cachegql.index.ingest import identity
from cachegql.index.ingest.file_stock import FileStock
from cachegql.index.ingest.locations import ReadError
from cachegql.index.ingest.manifest_listing import is_regular, listed_manifests
from cachegql.index.ingest.tarball_sizes import (
    MANIFEST_MAX_BYTES,
    STOCK_KIND,
    PendingSizes,
    _send_sizes,
    tarball_sizes,
)

UNLISTED = "folder of spec manifests cannot be listed; the sizes of its binaries are unknown"


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sizes")
    summary = write_mirror(MirrorConfig(specs=120, packages=30, stacks=2, seed=5), root)
    folder = summary.mirror / "v3" / "manifests" / "spec"
    broken = sorted(folder.glob("*/*.spec.manifest.json"))[7]
    broken.write_text('{"data": []}')  # a manifest without a tarball record
    return folder


def _started(specs: Path) -> tuple[PendingSizes, multiprocessing.process.BaseProcess, int]:
    """Sizes pending in a process of their own, that process and its pid."""
    before = set(multiprocessing.active_children())
    pending = PendingSizes(specs, process_from=1)
    (child,) = set(multiprocessing.active_children()) - before
    assert child.pid is not None
    return pending, child, child.pid


def _ended(pid: int) -> bool:
    """Whether the process is gone, reaped (its object is closed by then)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _stock_now(specs: Path) -> str | None:
    """The manifests' stock as they are now, as a build takes it to compare with a
    previous one's (identity.py); None if one cannot be looked at."""
    try:
        return identity._stock_now(STOCK_KIND, (path for path, _ in listed_manifests(specs)))
    except ReadError:
        return None


def test_a_second_process_reads_what_this_one_reads(specs: Path) -> None:
    here = tarball_sizes(specs)
    pending, child, pid = _started(specs)
    assert child.is_alive()
    assert pending.stock is None  # not in yet

    assert pending.result() == here
    assert pending.stock == _stock_now(specs) is not None
    assert _ended(pid)
    assert pending.peak_rss_mb > 10  # an interpreter of its own, told back
    sizes, problems = here
    assert len(sizes) == 119 and all(size >= 0 for size in sizes.values())
    assert [p.message for p in problems] == ["spec manifest without a tarball size; ignored"]


def test_names_no_text_can_hold_come_back_from_the_process(tmp_path: Path, specs: Path) -> None:
    folder = tmp_path / "specs" / "odd"
    folder.mkdir(parents=True)
    content = next(specs.glob("*/*.spec.manifest.json")).read_bytes()
    for name in (b"pkg-a\nb", b"pkg-x\xffy", b"pkg-plain", b"pkg-"):  # the hash after the last -
        (folder / os.fsdecode(name + b".spec.manifest.json")).write_bytes(content)
    here = tarball_sizes(tmp_path / "specs")
    assert set(here[0]) == {"a\nb", os.fsdecode(b"x\xffy"), "plain", ""}

    pending = PendingSizes(tmp_path / "specs", process_from=1)
    assert pending.result() == here
    assert pending.peak_rss_mb > 0  # from the process, not read here after it failed
    # Lines of names that are no UTF-8 are hashed alike in both processes.
    assert pending.stock == _stock_now(tmp_path / "specs") is not None


def test_a_folder_that_cannot_be_listed_is_a_problem_and_the_rest_is_read(
    tmp_path: Path, specs: Path
) -> None:
    root = tmp_path / "specs"
    content = next(specs.glob("*/*.spec.manifest.json")).read_bytes()
    for name in ("open", "shut"):
        (root / name).mkdir(parents=True)
        (root / name / f"{name}-1.0-h{name}.spec.manifest.json").write_bytes(content)
    (root / "shut").chmod(0)
    try:
        if os.access(root / "shut", os.R_OK):
            pytest.skip("this user reads any folder (root): nothing to refuse")
        here = tarball_sizes(root)
        pending = PendingSizes(root, process_from=1)
        assert pending.result() == here
    finally:
        (root / "shut").chmod(0o755)
    sizes, problems = here
    assert list(sizes) == ["hopen"]
    assert [p.path for p in problems] == [f"{root}/shut"]
    assert "cannot be listed; the sizes of its binaries are unknown" in problems[0].message


def test_sizes_are_read_here_when_the_process_dies(specs: Path) -> None:
    pending, child, pid = _started(specs)
    os.kill(pid, signal.SIGKILL)
    child.join()

    assert pending.result() == tarball_sizes(specs)
    assert pending.stock == _stock_now(specs) is not None  # read here, so stocked here


def test_a_stopped_build_ends_the_reading_process(specs: Path) -> None:
    pending, _, pid = _started(specs)
    pending.cancel()
    assert _ended(pid)


def test_few_manifests_are_read_here(specs: Path) -> None:
    before = set(multiprocessing.active_children())
    pending = PendingSizes(specs, process_from=10_000)
    assert set(multiprocessing.active_children()) == before
    assert pending.result() == tarball_sizes(specs)
    assert pending.peak_rss_mb == 0
    assert pending.stock == _stock_now(specs) is not None


def test_a_folder_without_manifests_has_no_sizes(tmp_path: Path) -> None:
    assert PendingSizes(tmp_path / "none", process_from=1).result() == ({}, [])


def test_the_closing_line_tells_the_readers_memory_beside_the_builds(tmp_path: Path) -> None:
    report = BuildReport(
        out=tmp_path, folder=tmp_path, pages=0, caches=1, specs=9, tags={"develop": 9}, seconds=2.0
    )
    assert f"peak RSS 0 MB -> {tmp_path}" in report.summary()
    report.peak_rss_mb, report.helper_rss_mb = 1980, 160
    assert "peak RSS 1980 MB (and 160 MB in a manifest reader) -> " in report.summary()


def test_a_folder_that_cannot_be_listed_even_by_root(
    tmp_path: Path, specs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root lists any folder: a refusal is made here (os.scandir raising, as it does for
    others), for the two ways of reading that run in this process."""
    root = tmp_path / "specs"
    content = next(specs.glob("*/*.spec.manifest.json")).read_bytes()
    for name in ("open", "shut"):
        (root / name).mkdir(parents=True)
        (root / name / f"{name}-1.0-h{name}.spec.manifest.json").write_bytes(content)
    scandir = os.scandir

    def refusing(path: str) -> Any:
        if path.endswith("/shut"):
            raise PermissionError(13, "Permission denied", path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    sizes, problems = tarball_sizes(root)
    assert list(sizes) == ["hopen"]
    assert [(p.path, p.message) for p in problems] == [
        (f"{root}/shut", f"{UNLISTED} (Permission denied)")
    ]
    # A folder not read leaves no stock: its tag gets no fingerprint, as for a failed read.
    assert _sent(root) == (sizes, problems, None)
    stock = FileStock(STOCK_KIND)
    assert tarball_sizes(root, stock) == (sizes, problems) and stock.digest() is None


def _sent(specs: Path) -> tuple[dict[str, int], list[Any], str | None]:
    """What the reading process's own function sends, run here (a thread takes it)."""
    receiver, sender = multiprocessing.Pipe(duplex=False)
    received: list[Any] = []

    def take() -> None:
        received.extend((receiver.recv_bytes(), receiver.recv()))

    taker = threading.Thread(target=take, daemon=True)
    taker.start()
    interrupt = signal.getsignal(signal.SIGINT)
    try:  # as from a build that is this process's parent
        _send_sizes(str(specs), sender, os.getppid())
    finally:
        signal.signal(signal.SIGINT, interrupt)
    taker.join(10)
    payload, peak = received
    hashes, sizes, problems, views, stock = pickle.loads(payload)
    assert views == []  # none given
    assert isinstance(peak, int) and peak > 0
    names = hashes.decode().split("/") if sizes else []
    return dict(zip(names, sizes, strict=True)), problems, stock


def test_what_the_reader_sends_unpacks_to_what_this_process_reads(specs: Path) -> None:
    """The sizes, the problems, and the manifests' stock (by the status each was read
    with), which is the stock of the files as they are now."""
    stock = FileStock(STOCK_KIND)
    here = tarball_sizes(specs, stock)
    assert _sent(specs) == (*here, stock.digest())
    assert stock.digest() == _stock_now(specs) is not None


def test_a_manifest_that_cannot_be_read_leaves_no_stock(tmp_path: Path, specs: Path) -> None:
    """Its status after the failed read could be of content never read: nothing stands
    for it, so its tag gets no fingerprint (and is read again), by either reader."""
    root = tmp_path / "specs"
    shutil.copytree(specs, root)
    folder = next(p for p in root.iterdir() if p.is_dir())
    os.mkfifo(folder / "pipe-1.0-hpipe.spec.manifest.json")
    stock = FileStock(STOCK_KIND)
    sizes, problems = tarball_sizes(root, stock)
    assert "hpipe" not in sizes
    assert any(p.path.endswith("pipe-1.0-hpipe.spec.manifest.json") for p in problems)
    assert stock.digest() is None
    assert _sent(root)[2] is None
    assert _stock_now(root) is not None  # a stat alone sees the pipe


@pytest.mark.parametrize(
    "content",
    [b'{"data": "x"}', b'{"data": [1, "x"]}', b"[1]", b'{"data": [{"mediaType": 1}]}'],
    ids=["data-text", "records-not-objects", "not-an-object", "media-type-number"],
)
def test_a_manifest_of_any_shape_is_a_problem_not_a_failure(
    tmp_path: Path, specs: Path, content: bytes
) -> None:
    """Found by mutating every value of a manifest: `"data": "x"` ended the build."""
    root = tmp_path / "specs"
    shutil.copytree(specs, root)
    folder = next(p for p in root.iterdir() if p.is_dir())
    (folder / "odd-1.0-hodd.spec.manifest.json").write_bytes(content)
    sizes, problems = tarball_sizes(root)
    assert "hodd" not in sizes and len(sizes) == 119
    assert any(p.path.endswith("odd-1.0-hodd.spec.manifest.json") for p in problems)
    assert PendingSizes(root, process_from=1).result() == (sizes, problems)


def test_manifests_listed_as_links_are_checked_before_they_are_opened(
    tmp_path: Path, specs: Path
) -> None:
    """A manifest the listing shows as a regular file is opened without a `stat` first;
    a link is looked at first: one to a manifest is read, one to a device is not opened."""
    root = tmp_path / "specs"
    shutil.copytree(specs, root)
    folder = next(p for p in root.iterdir() if p.is_dir())
    manifest = next(folder.glob("*.spec.manifest.json"))
    (folder / "linked-1.0-hlinked.spec.manifest.json").symlink_to(manifest)
    (folder / "zero-1.0-hzero.spec.manifest.json").symlink_to("/dev/zero")
    listed = {path.rsplit("/", 1)[-1]: is_regular(entry) for path, entry in listed_manifests(root)}
    assert listed[manifest.name] is True
    assert listed["linked-1.0-hlinked.spec.manifest.json"] is False
    assert listed["zero-1.0-hzero.spec.manifest.json"] is False
    stock = FileStock(STOCK_KIND)
    sizes, problems = tarball_sizes(root, stock)
    linked = manifest.name.removesuffix(".spec.manifest.json").rsplit("-", 1)[-1]
    assert sizes["hlinked"] == sizes[linked]
    assert "hzero" not in sizes
    assert any(p.path.endswith("zero-1.0-hzero.spec.manifest.json") for p in problems)
    assert stock.digest() is None  # the device was not read: nothing stands for it
    assert PendingSizes(root, process_from=1).result() == (sizes, problems)


def test_a_manifest_too_large_to_be_one_is_not_read_by_either_reader(
    tmp_path: Path, specs: Path
) -> None:
    """Its size is the problem, told alike by this process and by the reading process."""
    root = tmp_path / "specs"
    shutil.copytree(specs, root)
    folder = next(p for p in root.iterdir() if p.is_dir())
    huge = folder / "huge-1.0-hhuge.spec.manifest.json"
    with huge.open("wb") as file:
        file.truncate(MANIFEST_MAX_BYTES + 1)
    sizes, problems = tarball_sizes(root)
    assert "hhuge" not in sizes and len(sizes) == 119
    told = [p.message for p in problems if p.path == str(huge)]
    assert told == [
        "spec manifest not read: 1,048,577 bytes, more than the 1,048,576 allowed; ignored"
    ]
    # Not read is a failed read: nothing stands for the manifests, so the tag gets no
    # fingerprint and is read again next time.
    assert _sent(root) == (sizes, problems, None)
    stock = FileStock(STOCK_KIND)
    tarball_sizes(root, stock)
    assert stock.digest() is None
