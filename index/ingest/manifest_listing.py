"""A v3 mirror's spec manifests, listed: `<specs>/<package>/*.spec.manifest.json`.

One small file per binary (a million at 1M specs), listed folder by folder with
`os.scandir` and sorted by name, paths as text (Path objects took seconds at a million).
The reader of their tarball sizes (tarball_sizes.py) and the fingerprints' looks at
their names and statuses (identity.py) list them here alike, so that the two feed a
`FileStock` the same files in the same order.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TypeVar

from cachegql.index.ingest.files import reason
from cachegql.index.ingest.read_ahead import read_ahead
from cachegql.index.records import Problem

__all__ = [
    "MANIFEST_SUFFIX",
    "holds_at_least",
    "is_regular",
    "listed_manifests",
    "manifest_folders",
]

MANIFEST_SUFFIX = ".spec.manifest.json"
_Listed = TypeVar("_Listed")
_UNLISTED = "folder of spec manifests cannot be listed; the sizes of its binaries are unknown"


def manifest_folders(
    specs: Path | str, unlisted: list[Problem] | None = None
) -> Iterator[tuple[str, list[str]]]:
    """The spec manifests under `specs` (`*/*.spec.manifest.json`) folder by folder, as
    `listed_manifests` lists them: each folder's path, and the names of its manifests."""
    for folder_entry in _entries(str(specs), _is_folder, unlisted) or ():
        folder = f"{specs}/{folder_entry.name}"
        # Names alone (`os.listdir`): an entry object per manifest was a fifth of a
        # rebuild's look at a mirror.
        yield folder, _listed(folder, _manifest_names, unlisted) or []


def holds_at_least(specs: Path, count: int) -> bool:
    """Whether `specs` holds `count` manifests or more: counted only that far, so that
    the build does not list (and hold) a million paths to learn it."""
    for seen, _ in enumerate(listed_manifests(specs), start=1):
        if seen >= count:
            return True
    return count <= 0


def listed_manifests(
    specs: Path | str, unlisted: list[Problem] | None = None, *, read_ahead_bytes: int = 0
) -> Generator[tuple[str, os.DirEntry[str]], None, None]:
    """The spec manifests under `specs`, sorted as paths sort (folder, then file name):
    each one's path, with its entry in the listing (`is_regular`). A folder that cannot
    be listed goes into `unlisted` (a problem: its binaries' sizes are unknown), the rest
    are still read. `read_ahead_bytes` over 0: the folders are listed, and their
    manifests of at most that many bytes (what the reader reads) asked of the disk, in a
    thread ahead of the reader (read_ahead.py); `unlisted` is then complete once the
    manifests are all taken."""
    folders = _listed_folders(specs, unlisted)
    if read_ahead_bytes > 0:
        folders = read_ahead(folders, read_ahead_bytes)
    with contextlib.closing(folders) as listed:
        for folder, files in listed:
            yield from ((f"{folder}/{file.name}", file) for file in files)


def _listed_folders(
    specs: Path | str, unlisted: list[Problem] | None
) -> Generator[tuple[str, list[os.DirEntry[str]]], None, None]:
    """The folders of manifests in order, each with its manifests' entries."""
    for folder_entry in _entries(str(specs), _is_folder, unlisted) or ():
        folder = f"{specs}/{folder_entry.name}"
        yield folder, _entries(folder, _is_manifest, unlisted) or []


def _entries(
    folder: str, wanted: Callable[[os.DirEntry[str]], bool], unlisted: list[Problem] | None
) -> list[os.DirEntry[str]] | None:
    """The entries of `folder` that are `wanted`, sorted by name."""

    def wanted_entries(folder: str) -> list[os.DirEntry[str]]:
        with os.scandir(folder) as entries:
            return sorted((entry for entry in entries if wanted(entry)), key=_name)

    return _listed(folder, wanted_entries, unlisted)


def _manifest_names(folder: str) -> list[str]:
    """The names of the spec manifests in `folder`, sorted (as `_entries` sorts them)."""
    names = os.listdir(folder)  # noqa: PTH208 (names as text: a Path each costs more)
    return sorted(name for name in names if name.endswith(MANIFEST_SUFFIX))


def _listed(
    folder: str, listing: Callable[[str], list[_Listed]], unlisted: list[Problem] | None
) -> list[_Listed] | None:
    """`listing(folder)`; None where `folder` is missing or cannot be listed (then a
    problem in `unlisted`)."""
    try:
        return listing(folder)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if unlisted is not None:
            unlisted.append(Problem(folder, f"{_UNLISTED} ({reason(exc)})"))
        return None


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a link that cannot be followed is no folder, as for Path.glob
        return False


def _is_manifest(entry: os.DirEntry[str]) -> bool:
    return entry.name.endswith(MANIFEST_SUFFIX)


def is_regular(entry: os.DirEntry[str]) -> bool:
    """Whether the listing shows a regular file, not a link (the file system's entry type:
    no system call where it gives one): `read_regular_status`'s `listed_regular`."""
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:  # not known: the read checks it before opening
        return False


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name
