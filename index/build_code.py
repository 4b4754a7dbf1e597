"""The code a build's files depend on, besides their sources: part of every tag's
fingerprint (index/ingest/identity.py), so that a build by other code reads every tag
again (docs/indexing/incremental.md)."""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from cachegql.index.disk.layout import FORMAT_VERSION

__all__ = ["CODE_FILES", "CODE_REVISION", "code_digest", "fingerprint_salt"]

# The source files (under the `cachegql.index` package) that decide what a build writes
# for given sources: the ingest, the writers and what they use. Their sha256 is part of
# every tag's fingerprint, so a change to any of them rebuilds every tag.
CODE_FILES = (
    "build.py",
    "build_code.py",
    "build_report.py",
    "tag_checks.py",
    "binary_urls.py",
    "fields.py",
    "records.py",
    "ingest/**/*.py",
    "spack/**/*.py",
    "disk/write*.py",
    "disk/dagwrite.py",
    "disk/graph_writer.py",
    "disk/walk.py",
    "disk/columns.py",
    "disk/layout.py",
    "disk/text.py",
    "disk/text_write.py",
)

# A manual bump on top of the code's digest, for a change outside CODE_FILES that changes
# what is written (a dependency's behaviour, say).
CODE_REVISION = 1


def code_digest(package: Path) -> str:
    """The sha256 of the CODE_FILES of the `cachegql.index` package folder `package`,
    names and contents."""
    digest = hashlib.sha256()
    paths = {path for pattern in CODE_FILES for path in package.glob(pattern) if path.is_file()}
    for path in sorted(paths, key=lambda p: p.relative_to(package).as_posix()):
        digest.update(f"{path.relative_to(package).as_posix()}\n".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@cache
def fingerprint_salt() -> tuple[object, ...]:
    """Besides a tag's sources, what its files depend on (index/ingest/identity.py): the
    format and the code; found once, when a first fingerprint is."""
    return (FORMAT_VERSION, code_digest(Path(__file__).parent), CODE_REVISION)
