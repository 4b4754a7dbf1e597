"""A hash prefix is searched within its bucket of the hash directory: the same range as
a search of the whole array, for every kind of prefix, and as the hashes that start with it."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cachegql.index import Snapshot
from cachegql.index.disk.snapshot import DIRECTORY_MIN_SPECS
from cachegql.index.spack.hashes import (
    HASH_ALPHABET,
    HASH_LENGTH,
    hash_directory,
    prefix_range,
)

ALPHABET = "".join(sorted(HASH_ALPHABET))


def _sorted_hashes(count: int, seed: int, odd: bool = False) -> np.ndarray:
    chooser = random.Random(seed)
    hashes = {"".join(chooser.choices(ALPHABET, k=HASH_LENGTH)) for _ in range(count)}
    # Neighbours that share long prefixes, and the first and last buckets' ends.
    some = sorted(hashes)[:20]
    hashes |= {h[:-1] + c for h in some for c in "a7"}
    hashes |= {"2" * HASH_LENGTH, "z" * HASH_LENGTH, "22" + "z" * 30, "zz" + "2" * 30}
    if odd:  # not hashes, which an index never holds: the directory must not depend on it
        hashes |= {"22~" + "a" * 29, "A" * HASH_LENGTH, "zzz" + "~" * 29, "abc", "~"}
    return np.array(sorted(h.encode() for h in hashes), dtype=f"S{HASH_LENGTH}")


def _prefixes(hashes: list[str], seed: int) -> list[str]:
    chooser = random.Random(seed)
    picked = chooser.sample(hashes, 200)
    cut = [h[: chooser.randint(1, HASH_LENGTH)] for h in picked]
    absent = ["".join(chooser.choices(ALPHABET, k=n)) for n in (3, 4, 7, 12, 32) * 10]
    others = ["", "2", "zz", "222", "zzz", "777", "aaa", "22z", "zz2", "ABC", "a~b", "~~~"]
    others += ["abcA", "zzz~", "222{", "22~", "abc", "A" * 5]
    return [*cut, *absent, *others, *picked, "a" * (HASH_LENGTH + 1)]


def _scanned(hashes: list[str], prefix: str) -> list[int]:
    return [at for at, h in enumerate(hashes) if h.startswith(prefix)]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_prefix_searched_in_its_bucket_is_the_whole_arrays_range(seed: int) -> None:
    sorted_hashes = _sorted_hashes(3000, seed)
    directory = _checked_directory(sorted_hashes)
    hashes = [h.decode() for h in sorted_hashes.tolist()]
    for prefix in _prefixes(hashes, seed):
        within = prefix_range(sorted_hashes, prefix, directory)
        assert within == prefix_range(sorted_hashes, prefix), prefix
        found = _scanned(hashes, prefix) if len(prefix) <= HASH_LENGTH else []
        if found:
            assert within == (found[0], found[-1] + 1), prefix
        else:
            assert within[0] == within[1], prefix


def test_a_directory_of_other_strings_searches_as_the_whole_array() -> None:
    """Strings that are not hashes (other characters, shorter) are sorted among the
    hashes as numpy sorts them; the directory's buckets hold them where the whole array's
    search finds them."""
    sorted_hashes = _sorted_hashes(2000, 3, odd=True)
    directory = _checked_directory(sorted_hashes)
    hashes = [h.decode() for h in sorted_hashes.tolist()]
    for prefix in _prefixes(hashes, 3):
        assert prefix_range(sorted_hashes, prefix, directory) == prefix_range(
            sorted_hashes, prefix
        ), prefix


def _checked_directory(sorted_hashes: np.ndarray) -> np.ndarray:
    """The directory, checked against each start searched for in the whole array."""
    directory = hash_directory(sorted_hashes)
    starts = np.array([a + b + c for a in ALPHABET for b in ALPHABET for c in ALPHABET], "S32")
    expected = [*sorted_hashes.searchsorted(starts).tolist(), len(sorted_hashes)]
    assert directory.tolist() == expected
    return directory


def test_no_hashes_no_range() -> None:
    empty = np.array([], dtype=f"S{HASH_LENGTH}")
    directory = hash_directory(empty)
    assert directory.tolist() == [0] * (len(ALPHABET) ** 3 + 1)
    assert prefix_range(empty, "abcdefg", directory) == (0, 0)


def test_a_snapshots_lookups_use_its_directory(demo_snapshot: Snapshot) -> None:
    """Every hash of a real index found by its short and full forms, within its bucket;
    a tag too small for a directory keeps none."""
    sorted_hashes = demo_snapshot.hash_sorted
    directory = hash_directory(sorted_hashes)
    for row in range(demo_snapshot.num_specs):
        full = demo_snapshot.hash_of(row)
        for prefix in (full[:3], full[:7], full):
            lo, hi = prefix_range(sorted_hashes, prefix, directory)
            assert (lo, hi) == demo_snapshot.hash_prefix_rows(prefix)
            assert (lo, hi) == prefix_range(sorted_hashes, prefix)
            assert row in demo_snapshot.hash_rows[lo:hi].tolist()
    assert demo_snapshot.num_specs < DIRECTORY_MIN_SPECS
    assert demo_snapshot.hash_directory is None
