"""Spec manifests asked of the disk ahead of their reading (read_ahead.py).

The listing read ahead gives what the listing gives, in order, with its problems; each
file of a folder out of memory is asked of the kernel before the folder is handed over,
unless it is larger than the reader reads, and a folder in memory is not; a FIFO or link
swapped in after the listing is not waited on; an error of the listing reaches the
reader; a reader that stops early stops the thread.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cachegql.index.ingest import read_ahead as read_ahead_module
from cachegql.index.ingest.manifest_listing import listed_manifests
from cachegql.index.ingest.read_ahead import _ask, _in_memory, read_ahead
from cachegql.index.records import Problem

SUFFIX = ".spec.manifest.json"
MAX_BYTES = 1 << 20
ADVICE = pytest.mark.skipif(
    not hasattr(os, "posix_fadvise"), reason="this system takes no advice (posix_fadvise)"
)


def _mirror_specs(root: Path, folders: int = 6, files: int = 40) -> Path:
    specs = root / "spec"
    for f in range(folders):
        folder = specs / f"pkg{f}"
        folder.mkdir(parents=True)
        for n in range(files):
            (folder / f"pkg{f}-1.0-h{f}x{n:03d}{SUFFIX}").write_text('{"data": []}\n' * 40)
    return specs


def _listed(specs: Path, ahead: bool) -> tuple[list[tuple[str, bool]], list[Problem]]:
    unlisted: list[Problem] = []
    listed = [
        (path, entry.is_file(follow_symlinks=False))
        for path, entry in listed_manifests(
            specs, unlisted, read_ahead_bytes=MAX_BYTES if ahead else 0
        )
    ]
    return listed, unlisted


def _resident(path: Path | str) -> bool:
    """Whether the file's first page is in the page cache, by `mincore` (a read that may
    not wait, as `_in_memory` tries, starts the read it is refused)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    libc.mmap.argtypes += [ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    fd = os.open(path, os.O_RDONLY)
    try:
        address = libc.mmap(None, 1, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        assert address not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
        try:
            pages = ctypes.create_string_buffer(1)
            assert libc.mincore(address, 1, pages) == 0, os.strerror(ctypes.get_errno())
            return bool(pages.raw[0] & 1)
        finally:
            libc.munmap(address, 1)
    finally:
        os.close(fd)


def _dropped(path: Path) -> bool:
    """Drop a file's pages from the page cache; whether they are gone (not on tmpfs)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return not _resident(path)


def test_the_listing_read_ahead_is_the_listing(tmp_path: Path) -> None:
    specs = _mirror_specs(tmp_path)
    fifo = specs / "pkg2" / f"fifo-1.0-hfifo{SUFFIX}"
    os.mkfifo(fifo)
    (specs / "pkg3" / f"link-1.0-hlink{SUFFIX}").symlink_to(fifo)
    (specs / "pkg4" / f"gone-1.0-hgone{SUFFIX}").symlink_to(tmp_path / "nowhere")
    (specs / "not-a-folder").write_text("x")
    refused = specs / "pkg5"
    refused.chmod(0)
    listed: dict[bool, tuple[list[tuple[str, bool]], list[Problem]]] = {}

    def list_both() -> None:
        listed[False] = _listed(specs, ahead=False)
        listed[True] = _listed(specs, ahead=True)

    lister = threading.Thread(target=list_both, daemon=True)
    lister.start()
    lister.join(30)
    refused.chmod(0o755)
    assert not lister.is_alive(), "the read-ahead opened the FIFO and waits on it"
    assert listed[True] == listed[False]
    paths = [path for path, _ in listed[True][0]]
    refusing = os.geteuid() != 0  # root lists any folder
    assert len(paths) == (5 if refusing else 6) * 40 + 3
    assert paths == sorted(paths)
    assert [p.path for p in listed[True][1]] == ([str(refused)] if refusing else [])


@ADVICE
def test_a_folder_read_ahead_asks_the_kernel_for_each_small_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each file of a folder out of memory is asked of the kernel (the real
    `posix_fadvise`, watched), in inode order, before the folder is handed over, but one
    larger than the reader reads. Whether and when the kernel acts on the advice is its
    own (a hint it may drop): on this project's machines, a virtual disk, such files came
    in after 80 s once, and not within 30 s in a CI run, so their residency is not held
    to a time here; `make bench` measures what reading ahead saves."""
    specs = _mirror_specs(tmp_path, folders=1)
    large = specs / "pkg0" / f"large-1.0-hlarge{SUFFIX}"
    large.write_bytes(b" " * 8192)
    advised: list[tuple[str, int, int, int]] = []
    advise = os.posix_fadvise

    def watched(fd: int, offset: int, length: int, advice: int) -> None:
        advised.append((str(Path(f"/proc/self/fd/{fd}").readlink()), offset, length, advice))
        advise(fd, offset, length, advice)

    monkeypatch.setattr(read_ahead_module, "_ADVISE", watched)
    # A folder whose first and last files are in memory is not asked for, and this
    # project's machines (a virtual disk) have some dropped files back in memory at once:
    # the page cache is not the test's to hold, so the folder is told out of memory here
    # (`_in_memory` itself is held to the page cache below).
    monkeypatch.setattr(read_ahead_module, "_in_memory", lambda path: False)
    folder_path = specs / "pkg0"
    listing = [(str(folder_path), list(os.scandir(folder_path)))]
    small = sorted((e.inode(), e.path) for e in listing[0][1] if e.path != str(large))
    expected = [(path, 0, Path(path).stat().st_size, os.POSIX_FADV_WILLNEED) for _, path in small]
    taken = read_ahead(iter(listing), 4096)
    folder, _entries = next(taken)  # asked for before it is handed over
    taken.close()
    assert folder == str(folder_path)
    assert advised == expected, "not every small file asked for once, in inode order"
    advised.clear()
    monkeypatch.setattr(read_ahead_module, "_in_memory", lambda path: True)
    taken = read_ahead(iter(listing), 4096)
    next(taken)
    taken.close()
    assert advised == [], "a folder in memory was asked for"


@ADVICE
def test_a_fifo_or_link_swapped_in_after_the_listing_is_not_waited_on(tmp_path: Path) -> None:
    specs = _mirror_specs(tmp_path, folders=1, files=3)
    entries = list(os.scandir(specs / "pkg0"))
    first, second, _ = sorted(entries, key=lambda e: e.name)
    Path(first.path).unlink()
    os.mkfifo(first.path)  # no writer: an open for reading that waits never returns
    Path(second.path).unlink()
    Path(second.path).symlink_to(first.path)
    asked = threading.Thread(target=_ask, args=(entries, MAX_BYTES, threading.Event()))
    asked.daemon = True
    asked.start()
    asked.join(30)
    assert not asked.is_alive(), "the read-ahead waits on a FIFO swapped in"


@ADVICE
def test_a_file_read_is_told_in_memory_and_a_dropped_one_is_not(tmp_path: Path) -> None:
    path = tmp_path / f"one-1.0-hone{SUFFIX}"
    path.write_text('{"data": []}')
    if not _dropped(path):
        pytest.skip(f"{tmp_path} keeps its files in memory (tmpfs): nothing to tell")
    # This project's machines (a virtual disk) sometimes have a file just dropped back in
    # memory at once: up to five tries to tell it out of memory. Told in memory while
    # mincore says it is out is wrong; back in memory by mincore too, the kernel's.
    for _ in range(5):
        if not _dropped(path):
            continue
        if not _in_memory(str(path)):
            break
        assert _resident(path), "told in memory while the page cache does not hold it"
    else:
        pytest.skip("the page cache here took the dropped file back at once, five times")
    path.read_bytes()
    if not _reads_without_waiting(path):
        pytest.skip(f"{tmp_path}'s file system cannot tell a read that would wait (RWF_NOWAIT)")
    assert _in_memory(str(path))
    empty = tmp_path / "empty"
    empty.touch()
    assert not _in_memory(str(empty))  # nothing tells whether it is in memory


def _reads_without_waiting(path: Path) -> bool:
    """Whether the system and `path`'s file system read a cached file with RWF_NOWAIT."""
    if not hasattr(os, "RWF_NOWAIT"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT) == 1
    except OSError:
        return False
    finally:
        os.close(fd)


def test_an_error_of_the_listing_reaches_the_reader(tmp_path: Path) -> None:
    def listing() -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
        yield str(tmp_path), []
        raise PermissionError("listing refused")

    taken = read_ahead(listing(), MAX_BYTES)
    assert next(taken) == (str(tmp_path), [])
    with pytest.raises(PermissionError, match="listing refused"):
        next(taken)


def test_a_reader_that_stops_early_stops_the_thread(tmp_path: Path) -> None:
    specs = _mirror_specs(tmp_path, folders=12, files=2)
    before = {t.ident for t in threading.enumerate()}
    manifests = listed_manifests(specs, read_ahead_bytes=MAX_BYTES)
    next(manifests)
    started = [t for t in threading.enumerate() if t.ident not in before]
    assert [t.name for t in started] == ["manifests-read-ahead"]
    manifests.close()
    assert not started[0].is_alive()
