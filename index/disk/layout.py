"""What an index build holds on disk, shared by the writer and the reader.

A build folder has `manifest.json` (format, build id, sources, tags, problems) and a
folder per tag: numpy arrays (`<column>.codes.npy`, posting lists as `.items.npy` and
`.offsets.npy`), `dictionaries.json` (each column's distinct values), the tarball
names as one blob, and a whoosh index in `text/`. A tag read from build caches also
has `nodes/` (the same columns for the DAG nodes that are not its binaries) and `dag/`
(edges, direct dependents and closure postings over node ids).
"""

from __future__ import annotations

import re

from whoosh.analysis import LowercaseFilter, RegexTokenizer
from whoosh.fields import ID, NUMERIC, TEXT, Schema

__all__ = [
    "ATOM",
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
    "text_schema",
]

# Bump when the files change, so that older builds are refused with a clear message.
FORMAT_VERSION = 4
MANIFEST = "manifest.json"
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


def text_schema() -> Schema:
    """The whoosh schema of a tag's text index."""
    analyzer = RegexTokenizer(_WORD_PATTERN) | LowercaseFilter()
    return Schema(
        kind=ID(stored=True),
        ref=NUMERIC(int, stored=True),
        words=TEXT(analyzer=analyzer, phrase=False),
        exact=ID(),
    )
