"""What an index build holds on disk, shared by the writer and the reader.

A build folder has `manifest.json` (format, build id, sources, tags, problems, and the
size and checksum of every other file of the build) and a folder per tag: numpy arrays
(`<column>.codes.npy`, posting lists as `.items.npy` and `.offsets.npy`),
`dictionaries.json` (each column's distinct values), the tarball names as one blob, and
a whoosh index in `text/`. A tag read from build caches also
has `nodes/` (the same columns for the DAG nodes that are not its binaries) and `dag/`
(edges, their reverse and the hubs' bits over node ids).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from whoosh.analysis import LowercaseFilter, RegexTokenizer
from whoosh.fields import ID, NUMERIC, TEXT, Schema

__all__ = [
    "ATOM",
    "CHECKSUM",
    "DAG_FILE",
    "DAG_FOLDER",
    "DEPTYPES",
    "DICTIONARIES",
    "FORMAT_VERSION",
    "MANIFEST",
    "NODES_FOLDER",
    "PACKAGE",
    "TEXT_FOLDER",
    "WORD",
    "file_checksum",
    "text_schema",
]

# Bump when the files change, so that older builds are refused with a clear message.
# 5: the manifest lists every file with its size and checksum.
# 6: `dag/` keeps the parents of each node and the hubs' bits, not the closure.
FORMAT_VERSION = 6
MANIFEST = "manifest.json"
# The manifest's checksum of each file. SHA-256 rather than BLAKE2b: with the SHA
# extensions of current x86 and ARM CPUs, OpenSSL's SHA-256 streams ~1.5 GB/s where
# BLAKE2b does ~1.0 GB/s (measured on the 2.7 GB index of 1M build-cache specs).
CHECKSUM = "sha256"
_CHUNK = 1 << 20  # 256 KiB chunks hash at half the speed of 1 MiB ones
DICTIONARIES = "dictionaries.json"
TEXT_FOLDER = "text"
# A tag with dependency data: its DAG, and the nodes that are not binaries of the tag.
DAG_FOLDER = "dag"
DAG_FILE = "dag.json"
NODES_FOLDER = "nodes"
DEPTYPES = ("build", "link", "run", "test")

# Kinds of text documents: one per package, one per variant atom.
PACKAGE = "package"
ATOM = "atom"
# Package names split on - _ . ; variants also on = : , and quotes.
_WORD_PATTERN = r"[^\s\-_.=:,+~'\"/@%^]+"
WORD = re.compile(_WORD_PATTERN)


def file_checksum(path: Path) -> str:
    """The hex checksum of a file, read in chunks: the writer records it, the reader checks it."""
    digest = hashlib.new(CHECKSUM)
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    with path.open("rb", buffering=0) as file:
        while size := file.readinto(buffer):
            digest.update(view[:size])
    return digest.hexdigest()


def text_schema() -> Schema:
    """The whoosh schema of a tag's text index."""
    analyzer = RegexTokenizer(_WORD_PATTERN) | LowercaseFilter()
    return Schema(
        kind=ID(stored=True),
        ref=NUMERIC(int, stored=True),
        words=TEXT(analyzer=analyzer, phrase=False),
        exact=ID(),
    )
