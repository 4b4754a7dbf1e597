"""Full-hash batch lookups: the rows of many complete hashes at once, and those missing."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from cachegql.index.disk.columns import Rows
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.errors import CriteriaError, shorten
from cachegql.index.spack.hashes import HASH_LENGTH, is_hash

__all__ = ["full_hash", "hash_rows", "missing_hashes"]


def full_hash(text: str) -> str:
    """A complete hash, lower-cased (a leading `/` allowed); a CriteriaError otherwise."""
    value = text.strip().removeprefix("/").lower()
    if not is_hash(value):
        raise CriteriaError(
            f"{shorten(text)} is not a full hash ({HASH_LENGTH} characters of a-z and 2-7); "
            "use hashPrefix for a prefix"
        )
    return value


def _positions(snapshot: Snapshot, hashes: Iterable[str]) -> tuple[list[str], list[int]]:
    """Each hash with its position in the sorted hashes, or -1 when the table lacks it."""
    wanted = list(hashes)
    sorted_hashes = snapshot.hash_sorted
    if not wanted or not len(sorted_hashes):
        return wanted, [-1] * len(wanted)
    # Keys in the array's own dtype: a wider key would make numpy copy every hash.
    keys = np.array([h.encode() for h in wanted], dtype=sorted_hashes.dtype)
    found = np.searchsorted(sorted_hashes, keys).clip(max=len(sorted_hashes) - 1)
    hit = sorted_hashes[found] == keys
    return wanted, [int(p) if h else -1 for p, h in zip(found.tolist(), hit.tolist(), strict=True)]


def hash_rows(snapshot: Snapshot, hashes: Iterable[str]) -> Rows:
    """The rows of the specs with these full hashes, ascending (hashes it lacks add none)."""
    _, positions = _positions(snapshot, hashes)
    kept = np.array([p for p in positions if p >= 0], dtype=np.intp)
    rows: Rows = np.unique(snapshot.hash_rows[kept]).astype(np.int32)
    return rows


def missing_hashes(snapshot: Snapshot, hashes: Iterable[str], rows: Rows) -> list[str]:
    """The hashes, in the order asked and once each, of no spec among the result `rows`."""
    wanted, positions = _positions(snapshot, dict.fromkeys(hashes))
    result = np.sort(rows)
    missing = []
    for text, position in zip(wanted, positions, strict=True):
        if position < 0:
            missing.append(text)
            continue
        row = snapshot.hash_rows[position]
        at = int(np.searchsorted(result, row))
        if at >= len(result) or result[at] != row:
            missing.append(text)
    return missing
