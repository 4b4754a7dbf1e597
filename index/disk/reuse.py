"""Reusing the tags of the previous build of `--out` in a new one (incremental re-index).

The manifest records each tag's fingerprint (index/ingest/identity.py: its sources' content,
the format, the code). A tag whose fingerprint is unchanged is not read again: its folder's
files are hard-linked from the previous build into the new one (copied where a link cannot
be made), checked against the previous manifest's sizes and checksums as they are, and
listed in the new manifest with those checksums. What the manifest said of the tag (its
counts, its problems) is carried over with it.

Never a failure: a previous build that is missing, of another format or unreadable is no
previous build, and a tag whose files are missing, damaged or cannot be linked is built
again from its sources. Builds are read-only once published, so sharing their files'
inodes is safe; a file changed in place afterwards would show in both builds, and each
server notices it (index/disk/verify.py `VerifiedBuild.changed`).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachegql.index.disk.layout import DICTIONARIES, file_checksum
from cachegql.index.disk.verify import FileEntry, IndexLoadError, Manifest, read_manifest
from cachegql.index.records import Problem

__all__ = ["PreviousBuild", "ReusedTag"]

# Link errors after which a copy is made instead: another file system, a file system
# without hard links, too many links to one inode.
_NO_LINK = (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP)


class _DamagedError(Exception):
    """A file of the previous build is not what its manifest says."""


@dataclass(frozen=True)
class ReusedTag:
    """A tag taken from the previous build: what its manifest entry said, and its files
    (relative to the tag's folder) with their sizes and checksums."""

    name: str
    packages: int
    specs: int
    caches: int
    merged_duplicates: int
    problems: list[Problem]
    mirrors: dict[str, Any]
    files: dict[str, FileEntry]


@dataclass(frozen=True)
class PreviousBuild:
    """The build `--out` points to, as far as its manifest can be read."""

    folder: Path
    manifest: Manifest

    @classmethod
    def open(cls, out: Path) -> PreviousBuild | None:
        """The build at `out`, or None if there is none usable (no link, another
        format, an unreadable manifest): the build is then a full one."""
        if not out.is_symlink():
            return None
        try:
            folder = out.resolve(strict=True)
            return cls(folder, read_manifest(out, folder))
        except (OSError, RuntimeError, IndexLoadError):
            return None

    def fingerprint(self, tag: str) -> str | None:
        entry = self._entry(tag)
        value = entry.get("fingerprint") if entry is not None else None
        return value if isinstance(value, str) else None

    def reuse(self, tag: str, fingerprint: str, into: Path) -> ReusedTag | None:
        """Put the files of `tag` into the new, absent folder `into` if its fingerprint is
        unchanged and its files are intact; else None, and `into` is left absent."""
        entry = self._entry(tag)
        if entry is None or self.fingerprint(tag) != fingerprint:
            return None
        try:
            reused = _parse(tag, entry, self.manifest)
            for name, file in reused.files.items():
                _take(self.folder / entry["folder"] / name, into / name, file)
        except (OSError, _DamagedError, KeyError, TypeError, ValueError):
            shutil.rmtree(into, ignore_errors=True)
            return None
        return reused

    def _entry(self, tag: str) -> dict[str, Any] | None:
        for entry in self.manifest.data.get("tags", []):
            if isinstance(entry, dict) and entry.get("name") == tag:
                return entry
        return None


def _parse(tag: str, entry: dict[str, Any], manifest: Manifest) -> ReusedTag:
    """The tag's entry, checked for shape; ValueError if it is not as written."""
    prefix = f"{entry['folder']}/"
    files = {
        name.removeprefix(prefix): file
        for name, file in manifest.files.items()
        if name.startswith(prefix)
    }
    if DICTIONARIES not in files:
        raise ValueError(f"tag {tag} lists no {DICTIONARIES}")
    packages, specs, caches, merged = (
        entry["packages"],
        entry["specs"],
        entry["caches"],
        entry["merged_duplicates"],
    )
    if not all(isinstance(n, int) and n >= 0 for n in (packages, specs, caches, merged)):
        raise ValueError(f"tag {tag}: counts are not counts")
    problems = [Problem(str(path), str(message)) for path, message in entry["problems"]]
    mirrors = manifest.data.get("mirrors", {}).get(tag, {})
    if not isinstance(mirrors, dict):
        raise ValueError(f"tag {tag}: mirrors are not an object")
    return ReusedTag(tag, packages, specs, caches, merged, problems, mirrors, files)


def _take(source: Path, target: Path, file: FileEntry) -> None:
    """Link (else copy) `source` to `target`, then check what `target` holds: being the
    same inode, a damaged source is found damaged here."""
    status = source.lstat()
    if not stat.S_ISREG(status.st_mode) or status.st_size != file.size:
        raise _DamagedError(source)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
        shutil.copyfile(source, target)
    if target.stat().st_size != file.size or file_checksum(target) != file.checksum:
        raise _DamagedError(source)
