"""Tarball sizes by spec hash as they travel: from the process that reads spec manifests
(tarball_sizes.py), and in a sizes part kept between builds (cache_parts.py). A million
sizes packed so are some 40 MB, against 150 MB as a dict."""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from sys import intern

__all__ = ["NAMES", "by_node_hash", "packed_sizes", "unpacked_sizes"]

NAMES = "utf-8"  # file names as os.scandir gives them, undecodable bytes and all


def packed_sizes(found: dict[str, int]) -> tuple[bytes, array[int]]:
    """Sizes by hash as the reading process sends them and a sizes part keeps them
    (cache_parts.py): the hashes as one text, separated by "/", the sizes in a typed array."""
    return "/".join(found).encode(NAMES, "surrogateescape"), array("q", found.values())


def unpacked_sizes(hashes: bytes, sizes: array[int]) -> dict[str, int]:
    """`packed_sizes`'s sizes by hash again, each hash the tag's node's own string."""
    names = hashes.decode(NAMES, "surrogateescape").split("/") if sizes else []
    return by_node_hash(names, sizes)


def by_node_hash(hashes: Iterable[str], sizes: Iterable[int]) -> dict[str, int]:
    """The sizes by hash, each hash the tag's node's own string: its nodes interned their
    hashes (a million fewer strings, 80 MB at 1M specs, and a lookup by a node's hash
    ends at its identity)."""
    return dict(zip(map(intern, hashes), sizes, strict=True))
