"""Checking an index build against its manifest before anything of it is served.

The writer lists every file of a build in its manifest with its size and checksum
(`index.disk.write`). Here a build is held to that list: the manifest must be well formed
and of this format, every tag folder and listed file present, no file missing, added,
cut short, rewritten or replaced by a link. A damaged build is refused with one line
naming the file and what is wrong, so that a server keeps the build it serves (or does
not start) rather than crash or answer wrongly from it later.

A verified build also keeps the identity of each file (`Stamp`): a file changed on disk
afterwards (see `VerifiedBuild.changed`) is noticed without reading it again.
"""

from __future__ import annotations

import json
import os
import re
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from cachegql.index.disk.layout import (
    CHECKSUM,
    DICTIONARIES,
    FORMAT_VERSION,
    MANIFEST,
    file_checksum,
)

__all__ = [
    "Change",
    "FileEntry",
    "IndexChangedError",
    "IndexLoadError",
    "Manifest",
    "Stamp",
    "TagEntry",
    "VerifiedBuild",
    "read_json",
    "read_manifest",
    "verify_build",
]

_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


class IndexLoadError(Exception):
    """The folder does not hold a usable index."""


class IndexChangedError(RuntimeError):
    """A file of a build being served changed on disk after the build was verified."""


@dataclass(frozen=True, slots=True)
class Stamp:
    """Which file a path held, and whether it was written since (size and mtime).

    Not the ctime, though a rewrite cannot set it back as it can the mtime: deleting or
    hard-linking a file changes its ctime too, and a server keeps reading a deleted file
    it has open, unharmed (old builds are deleted that way, see `index.disk.publish`).
    """

    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, status: os.stat_result) -> Stamp:
        return cls(status.st_ino, status.st_size, status.st_mtime_ns)

    def describe_change(self, now: Stamp | None) -> str:
        """What changed, in words, for a log line or an error."""
        if now is None:
            return "was deleted"
        if now.inode != self.inode:
            return "was replaced by another file"
        if now.size != self.size:
            how = "cut short" if now.size < self.size else "extended"
            return f"was {how} ({self.size} -> {now.size} bytes)"
        return "was rewritten in place"


@dataclass(frozen=True, slots=True)
class Change:
    """A file of a verified build, as it was then and as it is now (None: deleted)."""

    path: Path
    before: Stamp
    now: Stamp | None

    @property
    def in_place(self) -> bool:
        """Whether the file itself was written (the same inode): a reader holding it open
        sees the change, unlike a deletion or a replacement by another file."""
        return self.now is not None and self.now.inode == self.before.inode

    def __str__(self) -> str:
        return f"{self.path} {self.before.describe_change(self.now)}"


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A file as the manifest lists it."""

    size: int
    checksum: str


@dataclass(frozen=True, slots=True)
class TagEntry:
    name: str
    folder: str


@dataclass(frozen=True)
class Manifest:
    data: dict[str, Any]
    """The manifest as written (sources, counts, problems)."""
    build_id: str
    tags: list[TagEntry]
    files: dict[str, FileEntry]
    """Every file of the build but the manifest, by its path relative to the build."""


@dataclass(frozen=True)
class VerifiedBuild:
    """A build whose files matched its manifest, and the identity each file had then."""

    folder: Path
    manifest: Manifest
    stamps: dict[str, Stamp]

    def changed(self) -> list[Change]:
        """The files changed on disk since they were verified: a `stat` each, no reading."""
        changes = []
        for name, before in self.stamps.items():
            path = self.folder / name
            try:
                now: Stamp | None = Stamp.of(path.lstat())
            except OSError:
                now = None
            if now != before:
                changes.append(Change(path, before, now))
        return changes


def verify_build(shown: Path, folder: Path) -> VerifiedBuild:
    """Verify the build in `folder` (the resolved `shown`, as the user named it) against its
    manifest: structure first (cheap), then every file's checksum (reads it all)."""
    manifest = read_manifest(shown, folder)
    try:
        found = _scan(folder)
        _check_tags(folder, manifest, found)
        stamps = _check_listing(folder, manifest, found)
    except OSError as exc:  # a folder that cannot be listed, a link that vanished
        raise IndexLoadError(f"{exc.filename or folder} cannot be read: {exc.strerror}") from exc
    _check_checksums(folder, manifest.files)
    return VerifiedBuild(folder, manifest, stamps)


_HASHING_THREADS = min(
    4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
)
"""sha256 and the reads let go of the GIL: two threads check a 1M-spec build (348 MB) in
0.29 s against 0.54 s for one, on this project's 2-core machine."""


def _check_checksums(folder: Path, files: dict[str, FileEntry]) -> None:
    """Every file's checksum, files hashed side by side; a mismatch is reported for the
    first such file in the manifest's order, whichever thread finds it first."""
    with ThreadPoolExecutor(_HASHING_THREADS) as pool:
        for _ in pool.map(_check_checksum, [folder / name for name in files], files.values()):
            pass


def read_manifest(shown: Path, folder: Path) -> Manifest:
    """The manifest of the build in `folder`, checked for shape and format."""
    path = folder / MANIFEST
    if path.is_symlink():
        raise IndexLoadError(f"{path} is a symbolic link; a build holds no links")
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise IndexLoadError(
            f"{shown} is not an index built by 'cachegql index': {MANIFEST}: {exc.strerror or exc}"
        ) from exc
    except ValueError as exc:
        raise IndexLoadError(f"{path} is not valid JSON ({exc}); the build is damaged") from exc
    if not isinstance(data, dict):
        raise IndexLoadError(f"{path} is not a JSON object; the build is damaged")
    if data.get("format") != FORMAT_VERSION:
        raise IndexLoadError(
            f"{shown} was built in index format {data.get('format')!r}, this version reads "
            f"format {FORMAT_VERSION}; rebuild it with 'cachegql index'"
        )
    if data.get("checksum") != CHECKSUM:
        raise IndexLoadError(
            f"{path}: checksums are {data.get('checksum')!r}, this version checks {CHECKSUM!r}"
        )
    build_id = data.get("build_id")
    if not isinstance(build_id, str) or not build_id:
        raise IndexLoadError(f"{path}: 'build_id' is not a non-empty string")
    return Manifest(data, build_id, _tags(path, data.get("tags")), _files(path, data.get("files")))


def _tags(path: Path, value: Any) -> list[TagEntry]:
    if not isinstance(value, list) or not value:
        raise IndexLoadError(f"{path}: 'tags' is not a non-empty list")
    tags = []
    for item in value:
        name = item.get("name") if isinstance(item, dict) else None
        folder = item.get("folder") if isinstance(item, dict) else None
        if not isinstance(name, str) or not isinstance(folder, str) or not _inside(folder):
            raise IndexLoadError(f"{path}: a tag is not {{'name': ..., 'folder': ...}}: {item!r}")
        tags.append(TagEntry(name, folder))
    if len({t.name for t in tags}) != len(tags):
        raise IndexLoadError(f"{path}: a tag is listed twice")
    return tags


def _files(path: Path, value: Any) -> dict[str, FileEntry]:
    if not isinstance(value, dict):
        raise IndexLoadError(f"{path}: 'files' is not an object")
    files = {}
    for name, item in value.items():
        size = item.get("size") if isinstance(item, dict) else None
        digest = item.get(CHECKSUM) if isinstance(item, dict) else None
        if not (
            _inside(name)
            and name != MANIFEST
            and isinstance(size, int)
            and not isinstance(size, bool)
            and size >= 0
            and isinstance(digest, str)
            and _HEX_DIGEST.fullmatch(digest)
        ):
            raise IndexLoadError(
                f"{path}: 'files' lists {name!r} as {str(item)[:80]!r}: expected a path inside "
                f"the build, with its 'size' and '{CHECKSUM}'"
            )
        files[name] = FileEntry(size, digest)
    return files


def _inside(name: str) -> bool:
    """Whether `name` is a plain relative path that stays inside the build."""
    parts = PurePosixPath(name).parts
    return bool(parts) and not PurePosixPath(name).is_absolute() and ".." not in parts


@dataclass(frozen=True, slots=True)
class _Found:
    """An entry of the build folder as found on disk (never following links)."""

    status: os.stat_result

    @property
    def kind(self) -> str:
        mode = self.status.st_mode
        if stat.S_ISLNK(mode):
            return "link"
        return "folder" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _scan(folder: Path) -> dict[str, _Found]:
    """Every entry under `folder` by its relative path (`/`), links not followed."""
    found: dict[str, _Found] = {}
    pending = [(folder, "")]
    while pending:
        current, prefix = pending.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                name = prefix + entry.name
                item = _Found(entry.stat(follow_symlinks=False))
                found[name] = item
                if item.kind == "folder":
                    pending.append((Path(entry.path), name + "/"))
    return found


def _check_tags(folder: Path, manifest: Manifest, found: dict[str, _Found]) -> None:
    """Each tag's folder is there and holds its dictionaries (named before its files are)."""
    for tag in manifest.tags:
        item = found.get(tag.folder)
        if item is None or item.kind != "folder":
            what = "is missing" if item is None else f"is a {item.kind}, not a folder"
            raise IndexLoadError(f"{folder / tag.folder} (tag {tag.name!r}) {what}")
        if f"{tag.folder}/{DICTIONARIES}" not in manifest.files:
            raise IndexLoadError(
                f"{folder / MANIFEST}: tag {tag.name!r} has no {DICTIONARIES} in 'files'"
            )


def _check_listing(folder: Path, manifest: Manifest, found: dict[str, _Found]) -> dict[str, Stamp]:
    """Every listed file is a regular file of its size; nothing else is there."""
    stamps = {}
    for name, entry in manifest.files.items():
        item = found.get(name)
        path = folder / name
        if item is None:
            raise IndexLoadError(f"{path} is missing")
        if item.kind == "link":
            raise IndexLoadError(f"{path} is {_link(path)}; a build holds no links")
        if item.kind != "file":
            raise IndexLoadError(f"{path} is a {item.kind}, not a file")
        if item.status.st_size != entry.size:
            cut = "truncated" if item.status.st_size < entry.size else "grown"
            raise IndexLoadError(
                f"{path} is {item.status.st_size} bytes, the manifest says {entry.size} ({cut})"
            )
        stamps[name] = Stamp.of(item.status)
    folders = {str(PurePosixPath(name).parent) for name in manifest.files}
    folders |= {str(parent) for name in folders for parent in PurePosixPath(name).parents}
    for name, item in sorted(found.items()):
        if (
            name == MANIFEST
            or name in manifest.files
            or (item.kind == "folder" and name in folders)
        ):
            continue
        what = _link(folder / name) if item.kind == "link" else f"a {item.kind}"
        raise IndexLoadError(f"{folder / name} is {what} the manifest does not list")
    return stamps


def _link(path: Path) -> str:
    target = str(path.readlink())
    dangling = "" if path.exists() else ", which does not exist"
    return f"a symbolic link (to {target!r}{dangling})"


def _check_checksum(path: Path, entry: FileEntry) -> None:
    try:
        digest = file_checksum(path)
    except OSError as exc:
        raise IndexLoadError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    if digest != entry.checksum:
        raise IndexLoadError(
            f"{path} does not match its {CHECKSUM} in the manifest "
            f"({digest[:12]}..., expected {entry.checksum[:12]}...): it changed after the build"
        )


def read_json(path: Path) -> Any:
    """A JSON file of the build; a damaged one is refused naming it."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise IndexLoadError(f"{path} cannot be read as JSON: {exc}") from exc
