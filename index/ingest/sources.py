"""Find candidate page files in the sources given on the command line."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PAGE_FILE_NAME", "Candidate", "SourceError", "iter_candidates"]

# Folders walked for pages skip these: version control and editor clutter, never pages.
_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules"})
# The site's own file name for a package page: found in a folder, it must be a page.
PAGE_FILE_NAME = "specs.md"


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


def iter_candidates(sources: Iterable[Path]) -> Iterator[Candidate]:
    """Yield files to try: named files as they are, folders walked recursively in name order."""
    for source in sources:
        if source.is_file():
            yield Candidate(source, expected=True)
        elif source.is_dir():
            yield from _walk(source)
        else:
            raise SourceError(f"{source}: no such file or folder")


def _walk(folder: Path) -> Iterator[Candidate]:
    def fail(error: OSError) -> None:
        raise SourceError(f"{error.filename}: cannot read folder ({error.strerror})")

    for root, dirs, files in os.walk(folder, onerror=fail):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield Candidate(Path(root, name), expected=name == PAGE_FILE_NAME)
