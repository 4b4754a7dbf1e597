"""Many small files known by name, size and times, as one digest.

A local mirror has files its ingest reads past the opener: a spec manifest per binary
(a million at 1M specs), a v2 mirror's spec files when it has no index. Reading them
again for a fingerprint would not be cheap, so their names and statuses stand for them
(identity.py): size, modification time, inode and status change time. The change time
moves whenever a file is written, even with its modification time set back, or put in
another's place, or its mode or links change (a `chmod -R` makes the next build read the
files again). A file system whose inode numbers change between mounts (some FUSE and CIFS
mounts) has its files read again each build. A file rewritten twice within one tick of the
file system's clock, to the same size, is still missed.
`FileStock` hashes those as they are given, in the order the files are listed, without
holding the list. The reader of the spec manifests gives it the status of each file as it
opened it (tarball_sizes.py), so no file is looked at twice: a second `stat` of each, and
the list of a million entries kept for the tag, were 5 s and some 260 MiB of a 1M build's
peak memory.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Generator, Iterable
from itertools import groupby

import orjson

__all__ = ["FileStock", "folder_statuses", "statuses_now"]

# Files per JSON line fed: a line each took 0.9 s for 200,000 files, 0.2 s so.
_FILES_PER_LINE = 10_000


class FileStock:
    """The sha256 of files' names and statuses, fed in order; `digest()` is None when
    one of them could not be looked at or read."""

    def __init__(self, kind: str) -> None:
        self._kind = kind
        self._sha = hashlib.sha256()
        self._line: list[tuple[str, int, int, int, int]] = []
        self.complete = True

    def add(self, path: str, status: os.stat_result | None = None) -> None:
        """The file at `path` (text: a `Path` per file is a second at a million), by the
        `status` it was read with, else by its status now."""
        if status is None:
            try:
                status = os.stat(path)  # noqa: PTH116 (a text path, as listed)
            except OSError:  # gone, or a link to nothing: nothing stands for it
                self.complete = False
                return
        name = path.rsplit("/", 1)[-1]
        self._line.append((name, *_status_key(status)))
        if len(self._line) == _FILES_PER_LINE:
            self._feed()

    def add_folder(self, folder: str, names: Iterable[str]) -> None:
        """The files `names` of `folder`, in order, each by its status now: as `add` of
        each path, without a path made and split again per file (every spec manifest of
        every tag a rebuild compares goes through here)."""
        line = self._line
        for name, status in folder_statuses(folder, names):
            if status is None:  # gone, or a link to nothing: nothing stands for it
                self.complete = False
                continue
            # `_status_key`'s fields, written out: a call and a tuple less per file.
            line.append(
                (name, status.st_size, status.st_mtime_ns, status.st_ino, status.st_ctime_ns)
            )
            if len(line) == _FILES_PER_LINE:
                self._feed()
                line = self._line

    def add_read(self, path: str, status: os.stat_result | None) -> None:
        """The file at `path` by the status it was read with (taken before reading it);
        None: it could not be read, and nothing stands for it (`unread`)."""
        if status is None:
            self.unread()
        else:
            self.add(path, status)

    def unread(self) -> None:
        """A file that could not be read: its status after the failed read might be of
        content never read, so nothing stands for it (no digest, the tag read again)."""
        self.complete = False

    def digest(self) -> str | None:
        """The sha256 of what was fed; None when a file could not be looked at or read."""
        self._feed()
        return self._sha.hexdigest() if self.complete else None

    def _feed(self) -> None:
        if self._line:
            # orjson: `json.dumps` of these lines was a tenth of a 1M rebuild with nothing
            # changed (1.1 s). A name that is no UTF-8 (its bytes kept as surrogates) is
            # only `json`'s to write: such a line always is.
            line = [self._kind, self._line]
            try:
                text = orjson.dumps(line)
            except orjson.JSONEncodeError:
                text = json.dumps(line).encode()
            self._sha.update(text + b"\n")
            self._line = []


def _status_key(status: os.stat_result) -> tuple[int, int, int, int]:
    """What stands for a file's content: its size and modification time, and what moves
    when those may not: its inode (a link pointed at another file) and its status change
    time (written again with its modification time set back, put in another's place)."""
    return status.st_size, status.st_mtime_ns, status.st_ino, status.st_ctime_ns


def statuses_now(paths: Iterable[str]) -> Generator[tuple[str, os.stat_result | None]]:
    """Each of `paths` (listed folder by folder) with its status now, or None if it cannot
    be looked at (`folder_statuses`, a folder's paths at a time)."""
    for folder, group in groupby(paths, key=_folder_of):
        listed = list(group)
        names = (path.rpartition("/")[2] for path in listed)
        for path, (_, status) in zip(listed, folder_statuses(folder, names), strict=True):
            yield path, status


def folder_statuses(
    folder: str, names: Iterable[str]
) -> Generator[tuple[str, os.stat_result | None]]:
    """Each of the files `names` of `folder` with its status now, or None if it cannot be
    looked at. Each is looked at by its name in the folder's open descriptor: the kernel
    then walks one name, not the whole path (a million spec manifests: 3.5 s, not 5.0)."""
    fd = _open_folder(folder)
    try:
        for name in names:
            try:
                if fd is None:  # looked at by its path, which then says what is wrong
                    yield name, os.stat(f"{folder}/{name}")  # noqa: PTH116 (text)
                else:
                    yield name, os.stat(name, dir_fd=fd)
            except OSError:  # gone, or a link to nothing: nothing stands for it
                yield name, None
    finally:
        if fd is not None:
            os.close(fd)


def _folder_of(path: str) -> str:
    parent, slash, _ = path.rpartition("/")
    return parent or slash or "."  # "/x" is in "/", "x" in the working folder


def _open_folder(folder: str) -> int | None:
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:  # looked at by its path instead, which then says what is wrong
        return None
