"""Reusing the tags of the previous build of `--out` in a new one (incremental re-index).

The manifest records each tag's fingerprint (index/ingest/identity.py: its sources' content,
the format, the code). A tag whose fingerprint is unchanged is not read again: its folder's
files are hard-linked from the previous build into the new one (copied where a link cannot
be made), checked against the previous manifest's sizes and checksums as they are, and
listed in the new manifest with those checksums. What the manifest said of the tag (its
counts, its problems) is carried over with it. A tag read again takes its text index alike
when it is made of the same documents (`take_text`, index/disk/text_write.py).

Never a failure: a previous build that is missing, of another format, unreadable or
malformed (any value of its manifest not of the type written: a bool is not a count) is no
previous build, and a tag whose files are missing, damaged or cannot be linked is built
again from its sources, as is one whose folder holds other files than its manifest lists
(a folder is listed, not read). cachegql writes nothing into a build once it is published
(its files are not chmod'ed read-only), so sharing their inodes is safe; a file changed in
place by someone else would show in both builds, and each server notices it
(index/disk/verify.py `VerifiedBuild.changed`).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from cachegql.index.disk.layout import DICTIONARIES, TEXT_FOLDER, file_checksum
from cachegql.index.disk.verify import FileEntry, IndexLoadError, Manifest, read_manifest
from cachegql.index.ingest.digest_memo import Recorded, read_recorded
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
    parts: tuple[str, ...] = ()
    """The parts of its indexes that the build kept (index/ingest/cache_parts.py)."""
    text: str | None = None
    """The digest of its text index's documents (index/disk/text_write.py)."""


@dataclass(frozen=True)
class _Entry:
    """A tag of the previous manifest: its fingerprint, folder, what reusing it gives, and
    the local files its fingerprint hashed, by status (index/ingest/digest_memo.py)."""

    fingerprint: str | None
    folder: str
    tag: ReusedTag
    file_digests: dict[str, Recorded]
    index_fingerprint: str | None = None
    """Of its indexes alone (`tag_fingerprint` without `looked`); None from older code."""


@dataclass(frozen=True)
class PreviousBuild:
    """The build `--out` points to, as far as its manifest can be read."""

    folder: Path
    manifest: Manifest
    tags: dict[str, _Entry]

    @classmethod
    def open(cls, out: Path) -> PreviousBuild | None:
        """The build at `out`, or None if there is none usable (no link, another
        format, an unreadable or malformed manifest): the build is then a full one."""
        if not out.is_symlink():
            return None
        try:
            folder = out.resolve(strict=True)
            manifest = read_manifest(out, folder)
            return cls(folder, manifest, _entries(manifest))
        except (OSError, RuntimeError, IndexLoadError, ValueError):
            return None

    @cached_property
    def file_digests(self) -> dict[str, Recorded]:
        """The local files hashed for the previous build's fingerprints, by status."""
        return {path: found for e in self.tags.values() for path, found in e.file_digests.items()}

    def fingerprint(self, tag: str) -> str | None:
        entry = self.tags.get(tag)
        return entry.fingerprint if entry is not None else None

    def index_fingerprint(self, tag: str) -> str | None:
        entry = self.tags.get(tag)
        return entry.index_fingerprint if entry is not None else None

    def take_text(self, tag: str, digest: str, into: Path) -> bool:
        """Put the text index of `tag` into the new, absent folder `into` if it was made
        of the documents of this digest and its files are intact; else False, and `into`
        is left absent (`write_tag_folder`'s `earlier_text`)."""
        entry = self.tags.get(tag)
        if entry is None or entry.tag.text != digest:
            return False
        prefix = f"{TEXT_FOLDER}/"
        files = {
            name.removeprefix(prefix): file
            for name, file in entry.tag.files.items()
            if name.startswith(prefix)
        }
        return self._take_files(entry.folder, TEXT_FOLDER, files, into)

    def reuse(self, tag: str, fingerprint: str, into: Path) -> ReusedTag | None:
        """Put the files of `tag` into the new, absent folder `into` if its fingerprint is
        unchanged and its files are intact; else None, and `into` is left absent."""
        entry = self.tags.get(tag)
        if entry is None or entry.fingerprint != fingerprint:
            return None
        if DICTIONARIES not in entry.tag.files:
            return None
        return entry.tag if self._take_files(entry.folder, "", entry.tag.files, into) else None

    def _take_files(
        self, tag_folder: str, inside: str, files: Mapping[str, FileEntry], into: Path
    ) -> bool:
        """Put `files` (the manifest's, relative to the folder `inside` of a tag's
        folder) into the new, absent folder `into`, each checked; False if one is not
        what the manifest says, and `into` is left absent."""
        folder = self.folder / tag_folder / inside
        try:
            # The manifest's list of the files is not taken on trust: a name it lacks
            # would make an incomplete tag that still publishes.
            # A folder inside the tag's replaced by a link is not followed out of the build.
            if inside and folder.is_symlink():
                raise _DamagedError(f"{folder}: a link")
            if not files or _listing(folder) != set(files):
                raise _DamagedError(f"{folder}: not what the manifest lists")
            for name, file in files.items():
                _take(folder / name, into / name, file)
        except (OSError, _DamagedError):
            shutil.rmtree(into, ignore_errors=True)
            return False
        return True


def _entries(manifest: Manifest) -> dict[str, _Entry]:
    """Every tag of the manifest, each entry checked for shape (read_manifest checked
    their names and folders); ValueError if anything is not as written."""
    tags, mirrors = manifest.data.get("tags"), manifest.data.get("mirrors", {})
    if not isinstance(tags, list) or not isinstance(mirrors, dict):
        raise ValueError("the manifest's tags or mirrors are not as written")
    return {entry["name"]: _entry(entry, mirrors, manifest) for entry in tags}


def _entry(entry: dict[str, Any], mirrors: dict[str, Any], manifest: Manifest) -> _Entry:
    tag, folder, fingerprint = entry["name"], entry["folder"], entry.get("fingerprint")
    counts: list[Any] = [entry.get(k) for k in ("packages", "specs", "caches", "merged_duplicates")]
    # `type(...) is int`: JSON's true is a bool, which Python counts as an int.
    if not all(type(n) is int and n >= 0 for n in counts):
        raise ValueError(f"tag {tag}: counts are not counts")
    indexes = entry.get("index_fingerprint")
    if not all(f is None or isinstance(f, str) for f in (fingerprint, indexes)):
        raise ValueError(f"tag {tag}: a fingerprint is not a string")
    problems = entry.get("problems")
    if not isinstance(problems, list) or not all(_is_problem(p) for p in problems):
        raise ValueError(f"tag {tag}: problems are not [path, message] pairs")
    text = entry.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"tag {tag}: the text digest is not a string")
    parts = entry.get("parts", [])
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        raise ValueError(f"tag {tag}: parts are not names")
    tag_mirrors = mirrors.get(tag, {})
    if not isinstance(tag_mirrors, dict):
        raise ValueError(f"tag {tag}: mirrors are not an object")
    prefix = f"{folder}/"
    files = {
        name.removeprefix(prefix): file
        for name, file in manifest.files.items()
        if name.startswith(prefix)
    }
    packages, specs, caches, merged = counts
    reused = ReusedTag(
        tag,
        packages,
        specs,
        caches,
        merged,
        [Problem(path, message) for path, message in problems],
        tag_mirrors,
        files,
        tuple(parts),
        text,
    )
    digests = read_recorded(entry.get("file_digests", {}), tag)
    return _Entry(fingerprint, folder, reused, digests, indexes)


def _is_problem(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)


def _listing(folder: Path) -> set[str]:
    """The names of everything in `folder` but its subfolders, relative to it (a link to
    a folder is named, not followed); nothing is read."""

    def fail(error: OSError) -> None:
        raise error

    names: set[str] = set()
    for parent, folders, files in os.walk(folder, onerror=fail):
        inside = Path(parent).relative_to(folder)
        links = [name for name in folders if (Path(parent) / name).is_symlink()]
        names.update((inside / name).as_posix() for name in (*files, *links))
    return names


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
