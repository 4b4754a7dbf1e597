"""Spack's DAG hashes: 32 lowercase base32 characters, and prefixes of them (`/22xi27u`)."""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

from cachegql.index.errors import CriteriaError, shorten

__all__ = [
    "HASH_ALPHABET",
    "HASH_LENGTH",
    "SHORT_HASH_LENGTH",
    "is_hash",
    "normalize_prefix",
    "prefix_range",
]

HASH_ALPHABET = frozenset("abcdefghijklmnopqrstuvwxyz234567")
HASH_LENGTH = 32
# What `spack find -l` and `spack buildcache list -l` show.
SHORT_HASH_LENGTH = 7
# Sorts after every base32 character: prefix + this bounds all extensions of prefix.
_AFTER_ALL = b"~"
# HASH_ALPHABET, HASH_LENGTH times: asked of every node and edge read (a regex is
# 0.4 against a set's 0.6 us).
_HASH = re.compile(f"[{''.join(sorted(HASH_ALPHABET))}]{{{HASH_LENGTH}}}")


def is_hash(text: str) -> bool:
    """Whether `text` is a complete hash."""
    return _HASH.fullmatch(text) is not None


def normalize_prefix(text: str) -> str:
    """Lower-case a hash prefix (a leading `/` is allowed); reject non-base32 characters."""
    stripped = text.strip()
    given = stripped.removeprefix("/")
    if not given:
        raise CriteriaError("a hash prefix needs at least one character")
    if len(given) > HASH_LENGTH:
        raise CriteriaError(f"a hash has {HASH_LENGTH} characters; {shorten(text)} is longer")
    prefix = given.lower()
    # One test in C; the position only to report. ASCII first: "K" (Kelvin) lowers to "k".
    if not (given.isascii() and HASH_ALPHABET.issuperset(prefix)):
        # At its position in the text as sent; a letter may lower to two ("İ": "i" and a dot).
        skipped = len(text) - len(text.lstrip()) + len(stripped) - len(given)
        position, char = next(
            (skipped + i, c)
            for i, c in enumerate(given, start=1)
            if not (c.isascii() and c.lower() in HASH_ALPHABET)
        )
        raise CriteriaError(
            f"{char!r} (position {position} of {shorten(text)}) is not a hash character: "
            "hashes use base32, the letters a-z (in either case) and the digits 2-7"
        )
    return prefix


def prefix_range(sorted_hashes: npt.NDArray[np.bytes_], prefix: str) -> tuple[int, int]:
    """The [lo, hi) positions in `sorted_hashes` (ascending) of the hashes starting with
    `prefix`.

    The search keys are made in the array's own dtype: given a key wider than the array,
    numpy first copies every hash at the key's width (n x width bytes: gigabytes for a
    long word). A prefix longer than the array's hashes starts none of them.
    """
    width = sorted_hashes.dtype.itemsize
    low = prefix.encode()
    if len(low) > width:
        return 0, 0
    # The array's own method: `np.searchsorted` adds a dispatch costing as much as the search.
    if len(low) == width:  # a whole hash: only itself extends it, and low + '~' would not fit
        keys = np.array([low, low], dtype=sorted_hashes.dtype)
        lo = int(sorted_hashes.searchsorted(keys[0], side="left"))
        return lo, int(sorted_hashes.searchsorted(keys[1], side="right"))
    keys = np.array([low, low + _AFTER_ALL], dtype=sorted_hashes.dtype)
    lo, hi = sorted_hashes.searchsorted(keys, side="left").tolist()
    return int(lo), int(hi)
