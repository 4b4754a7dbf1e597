"""Spack's DAG hashes: 32 lowercase base32 characters, and prefixes of them (`/22xi27u`)."""

from __future__ import annotations

from cachegql.index.errors import CriteriaError

__all__ = ["HASH_ALPHABET", "HASH_LENGTH", "SHORT_HASH_LENGTH", "is_hash", "normalize_prefix"]

HASH_ALPHABET = frozenset("abcdefghijklmnopqrstuvwxyz234567")
HASH_LENGTH = 32
# What `spack find -l` and `spack buildcache list -l` show.
SHORT_HASH_LENGTH = 7


def is_hash(text: str) -> bool:
    """Whether `text` is a complete hash."""
    return len(text) == HASH_LENGTH and HASH_ALPHABET.issuperset(text)


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
