"""What a build cache holds, as one digest, found without parsing it: the fingerprints
that let a rebuild reuse the tags whose sources did not change (index/build.py).

An identity changes whenever what the ingest would read from a cache changes, and it
is cheap to find: a v3 mirror's index manifest names its blob by sha256, so the small
manifest stands for the blob; a remote v2 mirror has `index.json.hash`; a local index
or spec file is hashed whole (hashing runs ~1.5 GB/s, parsing ~0.2 GB/s). Where it
cannot be told cheaply and for sure (an OCI registry; any read that fails), there is
no identity, and the tag is read again: a missing identity costs time, never answers.

A tag read anyway is read through a `RecordingOpener`, which keeps the digest of every
body: its fingerprint is then found from what was read, without a second request.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from cachegql.index.ingest.buildcache import MANIFEST, SPEC_FILE_SUFFIXES, V3_INDEX, V3_SPECS
from cachegql.index.ingest.files import read_regular
from cachegql.index.ingest.locations import Location, NotFoundError, Opener, ReadError
from cachegql.index.ingest.recognise import CacheRequest
from cachegql.index.ingest.spackdb import SourceFormatError

__all__ = ["RecordingOpener", "cache_identity", "tag_fingerprint"]


class RecordingOpener(Opener):
    """An opener that remembers the sha256 of each body it read, each location it
    found missing and each read that failed, for the identities of what it read
    (`tag_fingerprint`)."""

    def __init__(self, opener: Opener) -> None:
        super().__init__(opener.reader, opener.limits)
        self.digests: dict[str, str | None] = {}
        # Reads that failed otherwise than by a missing location (a 503, a timeout, a
        # checksum mismatch, a blob a manifest names but is missing): a tag with any of
        # them is not what its sources hold, so it gets no fingerprint.
        self.failures: dict[str, str] = {}

    def read(self, location: Location) -> bytes:
        try:
            data = super().read(location)
        except NotFoundError:
            self.digests[location.text] = None
            raise
        except ReadError as exc:
            self.failures[location.text] = str(exc)
            raise
        self.digests[location.text] = _sha(data)
        return data

    def read_verified(self, location: Location, sha256: str) -> bytes:
        try:
            data = super().read_verified(location, sha256)
        except ReadError as exc:  # a missing blob too: its manifest names it
            self.failures[location.text] = str(exc)
            raise
        self.digests[location.text] = sha256.lower()
        return data

    def digest(self, location: Location) -> str:
        """The sha256 of the body at `location`, as read already if it was; ReadError
        again, without a second request, if reading it failed."""
        if location.text in self.failures:
            raise ReadError(self.failures[location.text])
        if location.text not in self.digests:
            self.read(location)
        digest = self.digests[location.text]
        if digest is None:
            raise NotFoundError(f"{location}: not found")
        return digest


def tag_fingerprint(
    tag: str, requests: Sequence[CacheRequest], opener: Opener, salt: Iterable[object]
) -> str | None:
    """One tag's build caches, in order, with everything else its files depend on
    (`salt`: the index format, the code's revision; the limits sources are read within).
    None when one of its caches has no identity."""
    digest = hashlib.sha256()
    _feed(digest, "tag", tag, repr(opener.limits), *salt)
    recording = opener if isinstance(opener, RecordingOpener) else RecordingOpener(opener)
    for request in requests:
        identity = cache_identity(request, recording)
        if identity is None:
            return None
        _feed(digest, identity)
    return digest.hexdigest()


def cache_identity(request: CacheRequest, opener: RecordingOpener) -> str | None:
    """The identity of one build cache as the ingest would read it (its kind, label and
    location are part of it: they are in its records and problems), or None."""
    digest = hashlib.sha256()
    location = request.location
    _feed(digest, request.kind, request.label, str(location))
    try:
        with opener.source():
            if request.data is not None:
                _feed(digest, _sha(request.data))
            elif location.is_oci:
                return None  # its index is found through tags a registry may move
            elif request.kind in ("index", "spec-file") or (
                request.kind == "cache" and location.name.endswith(".json")
            ):
                _feed(digest, opener.digest(location))
            else:
                _mirror(location, opener, digest)
    except (ReadError, SourceFormatError, OSError, ValueError):
        return None  # reading it will say what is wrong
    return digest.hexdigest()


def _mirror(root: Location, opener: RecordingOpener, digest: hashlib._Hash) -> None:
    """Layout v3 first, then v2, as `read_mirror` tries them."""
    index = root.join(*V3_INDEX)
    try:
        manifest = opener.digest(index.join(MANIFEST))
    except NotFoundError:
        _v2(root, opener, digest)
        return
    _feed(digest, "v3", manifest)
    if root.is_url:
        return  # views and spec manifests are only read from local mirrors
    for view in sorted(p.name for p in index.path.iterdir() if (p / MANIFEST).is_file()):
        _feed(digest, "view", view, opener.digest(index.join(view, MANIFEST)))
    specs = root.join(*V3_SPECS).path
    if specs.is_dir():
        # A spec manifest per binary (a million at 1M specs), each read for its tarball's
        # size: their names, sizes and times stand for them, as reading them would not be
        # cheap. A manifest rewritten to the same size in the same nanosecond is missed.
        for path in sorted(specs.glob("*/*.spec.manifest.json")):
            status = path.stat()
            _feed(digest, path.name, status.st_size, status.st_mtime_ns)


def _v2(root: Location, opener: RecordingOpener, digest: hashlib._Hash) -> None:
    if root.is_url:
        # The `.hash` stands for the index (which is checked against it when read); a
        # mirror without one is known by its index's bytes.
        folder = root.join("build_cache")
        try:
            _feed(digest, "v2-hash", opener.digest(folder.join("index.json.hash")))
        except NotFoundError:
            _feed(digest, "v2", opener.digest(folder.join("index.json")))
        return
    local = root if _holds_index(root.path) else root.join("build_cache")
    try:
        hash_file = opener.digest(local.join("index.json.hash"))
    except NotFoundError:
        hash_file = ""
    try:
        _feed(digest, "v2", opener.digest(local.join("index.json")), hash_file)
    except NotFoundError:
        for path in _spec_files(local.path):  # no index: its spec files are read instead
            _feed(digest, "spec", path.name, _sha(read_regular(path)))


def _holds_index(folder: Path) -> bool:
    """Whether a mirror folder is itself a v2 `build_cache` folder (as `_read_v2` tells)."""
    return (folder / "index.json").is_file() or any(_spec_files(folder))


def _spec_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.iterdir() if p.name.endswith(SPEC_FILE_SUFFIXES) and p.is_file()
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _feed(digest: hashlib._Hash, *values: object) -> None:
    """Each call one JSON line: no two different sequences of values feed the same bytes."""
    digest.update(json.dumps([str(v) for v in values]).encode() + b"\n")
