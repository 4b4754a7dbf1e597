"""Spec manifests asked of the disk ahead of their reading (read_ahead.py).

The listing read ahead gives what the listing gives, in order, with its problems; a file
dropped from the page cache is in memory once its folder was read ahead; what is not a
regular file is never opened (a FIFO would block); an error of the listing reaches the
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

from cachegql.index.ingest.manifest_listing import listed_manifests
from cachegql.index.ingest.read_ahead import _in_memory, read_ahead
from cachegql.index.records import Problem

SUFFIX = ".spec.manifest.json"


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
        for path, entry in listed_manifests(specs, unlisted, ahead=ahead)
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
    listed: dict[bool, tuple[list[tuple[str, bool]], list[Problem]]] = {}

    def list_both() -> None:
        listed[False] = _listed(specs, ahead=False)
        listed[True] = _listed(specs, ahead=True)

    lister = threading.Thread(target=list_both, daemon=True)
    lister.start()
    lister.join(30)
    assert not lister.is_alive(), "the read-ahead opened the FIFO and waits on it"
    assert listed[True] == listed[False]
    paths = [path for path, _ in listed[True][0]]
    assert len(paths) == 6 * 40 + 3
    assert paths == sorted(paths)


def test_a_folder_read_ahead_is_in_memory_before_it_is_read(tmp_path: Path) -> None:
    specs = _mirror_specs(tmp_path, folders=3)
    files = sorted(specs.glob(f"*/*{SUFFIX}"))
    if not all(_dropped(path) for path in files):
        pytest.skip(f"{tmp_path} keeps its files in memory (tmpfs): nothing to read ahead")
    taken = read_ahead(iter([(str(specs / "pkg0"), list(os.scandir(specs / "pkg0")))]))
    folder, entries = next(taken)
    assert folder == str(specs / "pkg0")
    # The advice queues the reads and returns; they land within moments.
    for _ in range(200):
        if all(_resident(entry.path) for entry in entries):
            break
        threading.Event().wait(0.01)
    assert all(_resident(entry.path) for entry in entries)
    assert not any(_resident(path) for path in files if "pkg0" not in str(path))
    taken.close()


def test_a_file_read_is_told_in_memory_and_a_dropped_one_is_not(tmp_path: Path) -> None:
    path = tmp_path / f"one-1.0-hone{SUFFIX}"
    path.write_text('{"data": []}')
    if not _dropped(path):
        pytest.skip(f"{tmp_path} keeps its files in memory (tmpfs): nothing to tell")
    assert not _in_memory(str(path))
    path.read_bytes()
    assert _in_memory(str(path))


def test_an_error_of_the_listing_reaches_the_reader(tmp_path: Path) -> None:
    def listing() -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
        yield str(tmp_path), []
        raise PermissionError("listing refused")

    taken = read_ahead(listing())
    assert next(taken) == (str(tmp_path), [])
    with pytest.raises(PermissionError, match="listing refused"):
        next(taken)


def test_a_reader_that_stops_early_stops_the_thread(tmp_path: Path) -> None:
    specs = _mirror_specs(tmp_path, folders=12, files=2)
    before = {t.ident for t in threading.enumerate()}
    manifests = listed_manifests(specs, ahead=True)
    next(manifests)
    started = [t for t in threading.enumerate() if t.ident not in before]
    assert [t.name for t in started] == ["manifests-read-ahead"]
    manifests.close()
    assert not started[0].is_alive()
