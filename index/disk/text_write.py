"""The full-text half of a tag written: its documents, their digest, and the whoosh index
made of them (index/disk/text.py reads it).

A tag's documents are its package names and its variant atoms' words, a few thousand
even at 1M specs, and writing their whoosh index is a tenth of writing the tag. A tag
read again after a stack of it changed mostly has the same names: `write_text` then
takes the index an earlier build made of the same documents (found by their digest,
which also holds the code that writes them), checked as a reused tag's files are.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from whoosh import index as whoosh_index

from cachegql.index.build_code import fingerprint_salt
from cachegql.index.disk.layout import ATOM, PACKAGE, text_schema

__all__ = ["Document", "EarlierText", "text_documents", "write_text", "write_text_index"]

Document = tuple[str, int, str]
"""(kind, ref, text): a package or a variant atom, by its place in the tag's dictionary."""

EarlierText = Callable[[str, Path], bool]
"""Puts an earlier build's text index of the documents of this digest into the new,
absent folder given; False if it has none (intact), the folder then left absent."""


def text_documents(packages: Sequence[str], atoms: Sequence[str]) -> list[Document]:
    """The documents of a tag with these package names and variant atoms (`name=value`)."""
    documents = [(PACKAGE, i, name) for i, name in enumerate(packages)]
    documents.extend((ATOM, i, _atom_words(atom)) for i, atom in enumerate(atoms))
    return [document for document in documents if document[2]]


def documents_digest(documents: Sequence[Document]) -> str:
    """What a text index is made of: its documents, and the code and format that write it."""
    # `json.dumps` writes ASCII (any name, its undecodable bytes kept as surrogates too).
    made_of = json.dumps([repr(fingerprint_salt()), documents], separators=(",", ":"))
    return hashlib.sha256(made_of.encode("ascii")).hexdigest()


def write_text(folder: Path, documents: Sequence[Document], earlier: EarlierText | None) -> str:
    """The text index of `documents` in the new `folder`, taken from `earlier` when it has
    one of the same documents, else written; return the documents' digest."""
    digest = documents_digest(documents)
    if earlier is None or not earlier(digest, folder):
        write_text_index(folder, documents)
    return digest


def write_text_index(folder: Path, documents: Iterable[Document]) -> int:
    """Build a whoosh index of (kind, ref, text) documents in the new `folder`."""
    folder.mkdir(parents=True)
    ix = whoosh_index.create_in(str(folder), text_schema())
    writer = ix.writer(limitmb=256)
    count = 0
    for kind, ref, text in documents:
        writer.add_document(kind=kind, ref=ref, words=text, exact=text.lower())
        count += 1
    writer.commit(optimize=True)
    ix.close()
    return count


def _atom_words(atom: str) -> str:
    name, _, value = atom.partition("=")
    if value == "false":
        return ""
    return name if value == "true" else f"{name} {value}"
