"""The tags a rebuild compares with the previous build, and the order it takes them in.

A rebuild reuses a tag whose fingerprint did not move (index/ingest/identity.py). That
fingerprint looks at every spec manifest of the tag's local mirrors by name and status:
some 700,000 `stat`s for a tag of 333,333 binaries in ten mirrors, 3 s of one core. So
each compared tag's *index fingerprint* is found first, for all of them before any is
taken: it reads only what the opener reads (index manifests, and a local blob or index
file known by its status), a few files a mirror. A tag whose index fingerprint moved has
changed: it is read first, without the looks before, while a helper takes them
(look_ahead.py), its own first (they give its spec manifests' sizes from their part,
index/ingest/cache_parts.py), then those of the tags whose fingerprint the build still
has to compare, which are taken after.

A tag's folder is numbered by its place among the tags by name, whatever order they are
taken in, and the manifest lists them by name. A tag of several build caches that is
read again takes the index files that did not change as read before (`tag_parts`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from cachegql.index.build_code import fingerprint_salt
from cachegql.index.disk.reuse import PreviousBuild
from cachegql.index.ingest import CacheRequest, Opener
from cachegql.index.ingest.buildcache import V3_SPECS
from cachegql.index.ingest.cache_parts import CacheParts
from cachegql.index.ingest.identity import (
    CONTENT_LIMITS,
    RecordingOpener,
    local_mirrors,
    spec_manifest_stocks,
    tag_fingerprint,
)
from cachegql.index.ingest.locations import Location
from cachegql.index.ingest.look_ahead import LookAhead

__all__ = [
    "Compared",
    "compared_tags",
    "looks_needed",
    "reading_order",
    "stocks_later",
    "tag_parts",
]


@dataclass(frozen=True)
class Compared:
    """A tag compared with the previous build's: the opener its fingerprints read through,
    its index fingerprint now (None: it has none), and whether that moved."""

    opener: RecordingOpener
    index_fingerprint: str | None
    moved: bool


def compared_tags(
    tags: Sequence[str],
    requests: Mapping[str, list[CacheRequest]],
    previous: PreviousBuild,
    opener: Opener,
    salt: tuple[object, ...],
) -> dict[str, Compared]:
    """Each of `tags` (those of build caches alone, which the previous build has a
    fingerprint of), with its index fingerprint found now."""
    compared = {}
    for tag in tags:
        if previous.fingerprint(tag) is None:
            continue
        # Local files are hashed again only if their status moved (digest_memo.py).
        checking = RecordingOpener(opener, previous.file_digests)
        found = tag_fingerprint(tag, requests[tag], checking, salt, looked=False)
        before = previous.index_fingerprint(tag)
        moved = None not in (found, before) and found != before
        compared[tag] = Compared(checking, found, moved)
    return compared


def reading_order(tags: Sequence[str], compared: Mapping[str, Compared]) -> list[str]:
    """`tags` (by name) in the order a build takes them: those whose index fingerprint
    moved first, so that the looks at the others' mirrors go on beside their reading."""
    moved = [tag for tag in tags if tag in compared and compared[tag].moved]
    return moved + [tag for tag in tags if tag not in moved]


def looks_needed(
    order: Sequence[str],
    requests: Mapping[str, list[CacheRequest]],
    compared: Mapping[str, Compared],
) -> list[tuple[str, Location]]:
    """The looks at local mirrors a build will ask for, in the order it takes `order`: every
    mirror of a tag it compares by fingerprint, and of a tag known changed, those whose
    spec manifests' sizes it may take from their part (a tag of several caches: a lone
    one's are read with it, and looked at by their reader alone)."""
    return [
        (tag, root)
        for tag in order
        if tag in compared and (not compared[tag].moved or len(requests[tag]) > 1)
        for root in local_mirrors(requests[tag])
    ]


def stocks_later(
    tag: str, requests: Sequence[CacheRequest], looks: LookAhead
) -> dict[str, Callable[[], str | None]]:
    """For a tag read without its looks before (its index fingerprint moved): the stock
    of each of its local mirrors' spec manifests, asked of `looks` when its reader needs
    it (`CacheParts`), taken by the helper or, if it is behind, by the build."""

    def stock(root: Location) -> str | None:
        found = looks.look(tag, root, share=False)
        return found.spec_manifests if found is not None else None

    return {root.join(*V3_SPECS).text: partial(stock, root) for root in local_mirrors(requests)}


def tag_parts(
    tag: str,
    requests: list[CacheRequest],
    compared: Compared | None,
    looks: LookAhead,
    opener: Opener,
    folder: Path,
) -> CacheParts | None:
    """Where the tag's indexes are kept as read (in `folder`), and taken from when known
    already: for a tag of several caches, of which one may change alone (a lone cache
    that did not change is reused with its tag)."""
    if len(requests) < 2:
        return None
    checking = compared.opener if compared is not None else None
    known = checking.known_digests() if checking is not None else {}
    stocks = spec_manifest_stocks(checking) if checking is not None else {}
    moved = compared is not None and compared.moved
    later = stocks_later(tag, requests, looks) if moved else {}
    # What else decides what reading an index gives: the code, and the limits a body
    # must be within (one over them is not read, whatever part it had).
    bounds = [getattr(opener.limits, name) for name in CONTENT_LIMITS]
    code = hashlib.sha256(repr((fingerprint_salt(), bounds)).encode()).hexdigest()
    return CacheParts(folder, code, known, stocks, later)
