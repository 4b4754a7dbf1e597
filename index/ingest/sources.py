"""Find candidate page files in the sources given on the command line.

Only regular files are candidates. Anything else found in a folder is noted and skipped
without being opened: a named pipe would block the reader forever, a device (a link to
/dev/zero) reads without end. Links are followed to files and folders; each folder is
walked once, and a link to a folder that contains it (a loop) is noted, not followed.
A folder or entry that cannot be read is noted and the rest is still walked.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cachegql.index.ingest.files import describe_mode, reason
from cachegql.index.records import Problem

__all__ = ["PAGE_FILE_NAME", "Candidate", "SourceError", "iter_candidates"]

# Folders walked for pages skip these: version control and editor clutter, never pages.
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules"})
# The site's own file name for a package page: found in a folder, it must be a page.
PAGE_FILE_NAME = "specs.md"

# A folder by its identity on disk, whatever path or link it was reached through.
_FolderKey = tuple[int, int]
_Note = Callable[[Problem], None]


class SourceError(Exception):
    """A source given by the user does not exist or cannot be read."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file that may be a page; `expected` when it must be one (named, or specs.md).

    `data` is its content when it was already read (a page fetched from a URL).
    """

    path: Path
    expected: bool
    data: bytes | None = None


def iter_candidates(
    sources: Iterable[Path], problems: list[Problem] | None = None
) -> Iterator[Candidate]:
    """Yield files to try: named files as they are, folders walked recursively in name order.

    What is skipped and why (a pipe, a device, a loop, an unreadable folder) is appended
    to `problems`; without a list, the first such note raises SourceError instead.
    """
    note = problems.append if problems is not None else _raise
    for source in sources:
        try:
            mode = source.stat().st_mode
        except FileNotFoundError:
            raise SourceError(f"{source}: no such file or folder") from None
        except OSError as exc:
            note(Problem(str(source), _unusable_entry(source, exc)))
            continue
        if stat.S_ISREG(mode):
            yield Candidate(source, expected=True)
        elif stat.S_ISDIR(mode):
            yield from _walk(source, note)
        else:
            note(Problem(str(source), not_regular(source, mode)))


def _raise(problem: Problem) -> None:
    raise SourceError(str(problem))


def not_regular(path: Path, mode: int) -> str:
    """The note for a path that is neither a regular file nor a folder."""
    what = describe_mode(mode)
    if path.is_symlink():
        what = f"a link to {os.path.realpath(path)}, {what}"
    return f"{what}, not a regular file; skipped without reading it"


def _walk(folder: Path, note: _Note) -> Iterator[Candidate]:
    """The regular files under `folder`, depth first in name order, each folder once.

    A folder reached again through a link is not walked twice: a link back to one of
    the folders it is in (or that contain the source itself) is noted as a loop;
    one to a folder already walked elsewhere is silently not repeated.
    """
    containing = _containing_folders(folder)
    seen = set(containing)
    pending: list[tuple[Path, frozenset[_FolderKey]]] = [(folder, frozenset(containing))]
    while pending:
        current, ancestors = pending.pop()
        subfolders: list[tuple[Path, frozenset[_FolderKey]]] = []
        for path, info in _entries(current, note):
            if stat.S_ISREG(info.st_mode):
                yield Candidate(path, expected=path.name == PAGE_FILE_NAME)
            elif not stat.S_ISDIR(info.st_mode):
                note(Problem(str(path), not_regular(path, info.st_mode)))
            elif path.name in _SKIPPED_DIRS:
                continue
            elif (key := (info.st_dev, info.st_ino)) in ancestors:
                note(Problem(str(path), _loop(path)))
            elif key not in seen:
                seen.add(key)
                subfolders.append((path, ancestors | {key}))
        pending.extend(reversed(subfolders))


def _containing_folders(folder: Path) -> list[_FolderKey]:
    """The source folder and every folder that contains it, up to the root."""
    keys = []
    real = Path(os.path.realpath(folder))
    for path in (real, *real.parents):
        try:
            info = path.stat()
        except OSError:  # an ancestor we may pass through but not look at
            continue
        keys.append((info.st_dev, info.st_ino))
    return keys


def _entries(folder: Path, note: _Note) -> Iterator[tuple[Path, os.stat_result]]:
    """The visible entries of a folder in name order, with what they are (links followed)."""
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError as exc:
        note(
            Problem(
                str(folder),
                f"cannot read folder ({reason(exc)}); skipped with everything in it",
            )
        )
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        path = Path(entry.path)
        try:
            yield path, entry.stat()
        except OSError as exc:
            note(Problem(str(path), _unusable_entry(path, exc)))


def _unusable_entry(path: Path, error: OSError) -> str:
    """The note for an entry whose kind cannot even be found out."""
    if error.errno == errno.ELOOP:
        return "a link that leads back to itself (a loop of links); skipped"
    if error.errno == errno.ENOENT and path.is_symlink():
        return f"a link to {path.readlink()}, which does not exist; skipped"
    return f"cannot read ({reason(error)}); skipped"


def _loop(path: Path) -> str:
    target = os.path.realpath(path)
    return f"a link to {target}, a folder that contains it (a loop); not followed"
