"""Spack's version order and version constraints (`@1.2`, `@=1.2`, `@1.2:1.4`, `@1.2,1.4`).

As in Spack: a version is split into numeric and alphabetic components at `.`, `-`, `_`
and at digit/letter changes; numbers compare numerically, words sort before numbers,
and the "infinity" words (`develop`, `main`, ...) after both; a trailing `alpha`,
`beta` or `rc` marks a pre-release, older than the release (`1.2rc1 < 1.2`); and a
prefix is older than its extensions (`1.2 < 1.2.0 < 1.2.1`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "VersionKey",
    "VersionRange",
    "parse_constraint",
    "sort_versions",
    "version_key",
]

_SEGMENT = re.compile(r"(?:([0-9]+)|([a-zA-Z]+))([_.\-]*)")
# Spack's infinity versions, oldest first: each is newer than any numbered release.
_INFINITY = ("stable", "nightly", "trunk", "head", "master", "main", "develop")
_PRERELEASE = {"alpha": 0, "beta": 1, "rc": 2}
_FINAL = 3

Component = tuple[int, int, str]
VersionKey = tuple[tuple[Component, ...], tuple[int, ...]]
_NUMBER, _WORD, _INFINITE = 1, 0, 2


@lru_cache(maxsize=65536)
def version_key(version: str) -> VersionKey:
    """A sort key giving Spack's order: release components, then the pre-release marker."""
    segments = _SEGMENT.findall(version.strip())
    prerelease: tuple[int, ...] = (_FINAL,)
    if len(segments) >= 3 and segments[-2][1] in _PRERELEASE and segments[-1][0]:
        prerelease = (_PRERELEASE[segments[-2][1]], int(segments[-1][0]))
        segments = segments[:-2]
    elif len(segments) >= 2 and segments[-1][1] in _PRERELEASE:
        prerelease = (_PRERELEASE[segments[-1][1]],)
        segments = segments[:-1]
    return tuple(_component(number, word) for number, word, _ in segments), prerelease


def _component(number: str, word: str) -> Component:
    if number:
        return (_NUMBER, int(number), "")
    if word in _INFINITY:
        return (_INFINITE, _INFINITY.index(word), "")
    return (_WORD, 0, word)


def sort_versions(versions: list[str]) -> list[str]:
    """Oldest first, in Spack's order; ties (same key, other spelling) by text."""
    return sorted(versions, key=lambda v: (version_key(v), v))


def _successor(key: VersionKey) -> VersionKey:
    """The smallest version after every extension of `key` (`1.4` -> `1.5`), as Spack does."""
    release, prerelease = key
    if prerelease != (_FINAL,):
        return release, (*prerelease[:-1], prerelease[-1] + 1)
    if not release:
        return key
    kind, number, word = release[-1]
    if kind == _WORD:
        last: Component = (kind, 0, word[:-1] + chr(ord(word[-1]) + 1))
    else:
        last = (kind, number + 1, "")
    return (*release[:-1], last), prerelease


@dataclass(frozen=True, slots=True)
class VersionRange:
    """Versions in [low, high): `@1.2:1.4` is [1.2, 1.5), `@1.2` is [1.2, 1.3), `@=1.2` is exact."""

    low: VersionKey | None
    high: VersionKey | None
    exact: bool = False

    def contains(self, version: str) -> bool:
        key = version_key(version)
        if self.exact:
            return key == self.low
        return (self.low is None or key >= self.low) and (self.high is None or key < self.high)


def parse_constraint(text: str) -> list[VersionRange]:
    """`1.2`, `=1.2`, `1.2:1.4`, `1.2:`, `:1.4` or a comma-separated list of them."""
    ranges = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise ValueError(f"empty version in {text!r}")
        if part.startswith("="):
            ranges.append(VersionRange(version_key(part[1:]), None, exact=True))
        elif ":" in part:
            low_text, _, high_text = part.partition(":")
            low = version_key(low_text) if low_text.strip() else None
            high = _successor(version_key(high_text)) if high_text.strip() else None
            if low is not None and high is not None and low >= high:
                raise ValueError(f"{part!r} is an empty range")
            ranges.append(VersionRange(low, high))
        else:
            key = version_key(part)
            ranges.append(VersionRange(key, _successor(key)))
    return ranges
