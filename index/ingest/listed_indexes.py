"""What a listing's entry names when it names one index, not a mirror root.

An index file (`index.json`, or any `.json`); a layout v3 mirror's index blob
(`<mirror>/blobs/sha256/<checksum[:2]>/<checksum>`), as binaries.spack.io's generator of
`cache_spack_io_index.json` names each stack's index since layout v3, whose name is its
checksum and whose binaries are in `<mirror>`; or a v3 index manifest
(`<mirror>/v3/manifests/index/[<view>/]index.manifest.json`), read for the blob it names.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from cachegql.index.ingest.locations import Location, check_sha256

__all__ = [
    "MANIFEST",
    "V3_INDEX",
    "IndexBlob",
    "checked_blob",
    "index_blob",
    "is_index_file",
    "manifest_root",
]

V3_INDEX = ("v3", "manifests", "index")
MANIFEST = "index.manifest.json"
# The mirror root may be empty: a relative path from the mirror itself (`blobs/...`).
_BLOB = re.compile(
    r"^(?:(?P<root>.*)/)?blobs/sha256/(?P<prefix>[0-9a-f]{2})/(?P<sha256>[0-9a-f]{64})$"
)
_MANIFEST = re.compile(
    rf"^(?:(?P<root>.*)/)?{'/'.join(V3_INDEX)}/(?:[^/]+/)?{re.escape(MANIFEST)}$"
)


@dataclass(frozen=True)
class IndexBlob:
    """A v3 mirror's index blob: its mirror and its checksum."""

    root: Location
    sha256: str


def index_blob(location: Location) -> IndexBlob | None:
    """The index blob at `location`; None when it is named otherwise."""
    found = None if location.is_oci else _BLOB.match(location.without_query.rstrip("/"))
    if found is None or not found["sha256"].startswith(found["prefix"]):
        return None
    return IndexBlob(Location(found["root"] or "."), found["sha256"])


def manifest_root(location: Location) -> Location | None:
    """The mirror of the v3 index manifest at `location` (its root's or a view's); None
    when `location` is not one."""
    found = None if location.is_oci else _MANIFEST.match(location.without_query.rstrip("/"))
    return None if found is None else Location(found["root"] or ".")


def is_index_file(location: Location) -> bool:
    """Whether `location` names one index (a `.json` file, an index blob or manifest)."""
    return location.name.endswith(".json") or index_blob(location) is not None


def checked_blob(location: Location, data: bytes) -> IndexBlob | None:
    """The index blob at `location` whose bytes `data` were read already, checked against
    its name (ReadError: other bytes); None for an index file named otherwise."""
    blob = index_blob(location)
    if blob is not None:
        check_sha256(location, blob.sha256, hashlib.sha256(data).hexdigest())
    return blob
