"""What an index build holds on disk, shared by the writer and the reader.

A build folder has `manifest.json` (format, build id, sources, tags, problems) and a
folder per tag: numpy arrays (`<column>.codes.npy`, posting lists as `.items.npy` and
`.offsets.npy`), `dictionaries.json` (each column's distinct values), the tarball
names as one blob, and a whoosh index in `text/`.
"""

from __future__ import annotations

import re

from whoosh.analysis import LowercaseFilter, RegexTokenizer
from whoosh.fields import ID, NUMERIC, TEXT, Schema

__all__ = [
    "ATOM",
    "DICTIONARIES",
    "FORMAT_VERSION",
    "MANIFEST",
    "PACKAGE",
    "TEXT_FOLDER",
    "WORD",
    "text_schema",
]

# Bump when the files change, so that older builds are refused with a clear message.
FORMAT_VERSION = 3
MANIFEST = "manifest.json"
DICTIONARIES = "dictionaries.json"
TEXT_FOLDER = "text"

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
