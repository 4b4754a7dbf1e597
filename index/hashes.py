"""Spack hash prefixes (`/22xi27u`): validation and lookup in a sorted hash array."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from index.criteria import CriteriaError
from index.pages import HASH_ALPHABET, HASH_LENGTH

SHORT_HASH_LENGTH = 7


def normalize_prefix(text: str) -> str:
    """Lower-case a hash prefix (a leading `/` is allowed); reject non-base32 characters."""
    prefix = text.strip().removeprefix("/").lower()
    if not prefix:
        raise CriteriaError("a hash prefix needs at least one character")
    if len(prefix) > HASH_LENGTH:
        raise CriteriaError(f"a hash has {HASH_LENGTH} characters; {text!r} is longer")
    for position, char in enumerate(prefix, start=1):
        if char not in HASH_ALPHABET:
            raise CriteriaError(
                f"{char!r} (position {position} of {text!r}) is not a hash character: "
                "hashes use lowercase base32, the letters a-z and the digits 2-7"
            )
    return prefix


def prefix_range(sorted_hashes: npt.NDArray[np.bytes_], prefix: str) -> tuple[int, int]:
    """The [lo, hi) positions in `sorted_hashes` of the hashes starting with `prefix`."""
    low = prefix.encode()
    # '~' sorts after every base32 character, so low + '~' bounds all extensions of low.
    lo = int(np.searchsorted(sorted_hashes, low, side="left"))
    hi = int(np.searchsorted(sorted_hashes, low + b"~", side="left"))
    return lo, hi
