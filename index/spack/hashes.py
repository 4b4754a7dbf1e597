"""Spack's DAG hashes: 32 lowercase base32 characters, and prefixes of them (`/22xi27u`)."""

from __future__ import annotations

import re
from bisect import bisect_left

import numpy as np
import numpy.typing as npt

from cachegql.index.errors import CriteriaError, shorten

__all__ = [
    "HASH_ALPHABET",
    "HASH_LENGTH",
    "SHORT_HASH_LENGTH",
    "hash_directory",
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
# A hash directory's buckets: each start of this many characters, in sorted order (`_bucket`
# is written for three).
DIRECTORY_CHARS = 3
_SORTED_ALPHABET = "".join(sorted(HASH_ALPHABET))
_STARTS_AT_ONCE = 1024
_DIGITS = {byte: digit for digit, byte in enumerate(_SORTED_ALPHABET.encode())}
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


def hash_directory(sorted_hashes: npt.NDArray[np.bytes_]) -> npt.NDArray[np.int32]:
    """Where the hashes of each start of `DIRECTORY_CHARS` base32 characters begin in
    `sorted_hashes`, in sorted order of the starts, then the array's length: the bucket of
    a start is [its entry, the next). A prefix's hashes are in its start's bucket, and
    `prefix_range` searches only that: a few neighbouring hashes rather than a binary
    search's probes all over the array (measured in the server at 1M specs: a hash lookup
    was ~7 us of CPU with the search, 3 us less with this). Made by one search of the
    array for the starts, a thousand at a time (15 ms at 1M hashes): as keys in the array's
    dtype, all of them would be a megabyte, which the worker would keep once freed."""
    digits = np.frombuffer(_SORTED_ALPHABET.encode(), dtype=np.uint8)
    grid = np.meshgrid(*[digits] * DIRECTORY_CHARS, indexing="ij")  # in sorted order
    chars = np.stack(grid, axis=-1).reshape(-1, DIRECTORY_CHARS)
    starts = chars.view(f"S{DIRECTORY_CHARS}").ravel()
    positions = np.empty(len(starts) + 1, dtype=np.int32)
    for at in range(0, len(starts), _STARTS_AT_ONCE):
        keys = starts[at : at + _STARTS_AT_ONCE].astype(sorted_hashes.dtype)
        positions[at : at + _STARTS_AT_ONCE] = sorted_hashes.searchsorted(keys)
    positions[-1] = len(sorted_hashes)
    return positions


def prefix_range(
    sorted_hashes: npt.NDArray[np.bytes_],
    prefix: str,
    directory: npt.NDArray[np.int32] | None = None,
) -> tuple[int, int]:
    """The [lo, hi) positions in `sorted_hashes` (ascending) of the hashes starting with
    `prefix`; searched within its bucket of `directory` (`hash_directory`), if given.

    The search keys are made in the array's own dtype: given a key wider than the array,
    numpy first copies every hash at the key's width (n x width bytes: gigabytes for a
    long word). A prefix longer than the array's hashes starts none of them.
    """
    width = sorted_hashes.dtype.itemsize
    low = prefix.encode()
    if len(low) > width:
        return 0, 0
    if directory is not None and (bucket := _bucket(low)) is not None:
        start, end = directory.item(bucket), directory.item(bucket + 1)
        # The hashes as bytes (`.item`), compared as numpy compares them: none has a NUL.
        rows, read = range(end), sorted_hashes.item
        lo = bisect_left(rows, low, start, end, key=read)
        return lo, bisect_left(rows, low + _AFTER_ALL, lo, end, key=read)
    # The array's own method: `np.searchsorted` adds a dispatch costing as much as the search.
    if len(low) == width:  # a whole hash: only itself extends it, and low + '~' would not fit
        keys = np.array([low, low], dtype=sorted_hashes.dtype)
        lo = int(sorted_hashes.searchsorted(keys[0], side="left"))
        return lo, int(sorted_hashes.searchsorted(keys[1], side="right"))
    keys = np.array([low, low + _AFTER_ALL], dtype=sorted_hashes.dtype)
    lo, hi = sorted_hashes.searchsorted(keys, side="left").tolist()
    return int(lo), int(hi)


def _bucket(prefix: bytes) -> int | None:
    """The directory bucket of a prefix's first characters; None when it has fewer or
    they are not base32."""
    if len(prefix) < DIRECTORY_CHARS:
        return None
    digits = _DIGITS
    try:
        return (digits[prefix[0]] << 10) | (digits[prefix[1]] << 5) | digits[prefix[2]]
    except KeyError:
        return None
