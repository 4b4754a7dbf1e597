"""What a build cache holds, as one digest, found without parsing it: the fingerprints
that let a rebuild reuse the tags whose sources did not change (index/build.py).

An identity changes whenever what the ingest would read from a cache changes, and it
is cheap to find: a v3 mirror's index manifest names its blob by sha256, so the small
manifest stands for the blob; a remote v2 mirror has `index.json.hash`; a local index
or spec file is hashed whole (hashing runs ~1.5 GB/s, parsing ~0.2 GB/s), once: a later
build knows it by its status (digest_memo.py) while that does not move; the many small
files of a local mirror read past the opener (spec manifests, the spec files of a v2
mirror without an index) are known by name, size and time (`Stock`). Where it cannot be
told cheaply and for sure (an OCI registry; any read that failed), there is no identity,
and the tag is read again: a missing identity costs time, never answers.

A tag read anyway is read through a `RecordingOpener`, which keeps the digest of every
body (and every failure) as the ingest read it, its `Stock` taken before: its fingerprint
is then found from what was read, reading nothing twice and nothing after.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cachegql.index.ingest.buildcache import V3_SPECS, spec_file_paths, v2_folder, view_names
from cachegql.index.ingest.digest_memo import FileStatuses, Recorded
from cachegql.index.ingest.file_stock import FileStock, statuses_now
from cachegql.index.ingest.files import (
    Blob,
    PendingSha256,
    map_regular_status,
    read_regular_status,
)
from cachegql.index.ingest.listed_indexes import MANIFEST, V3_INDEX, is_index_file
from cachegql.index.ingest.locations import (
    Location,
    NotFoundError,
    Opener,
    PendingCheck,
    ReadError,
)
from cachegql.index.ingest.recognise import CacheRequest
from cachegql.index.ingest.spackdb import SourceFormatError
from cachegql.index.ingest.tarball_sizes import STOCK_KIND, manifest_paths

__all__ = [
    "CONTENT_LIMITS",
    "RecordingOpener",
    "Stock",
    "cache_identity",
    "tag_fingerprint",
    "take_stock",
]


# The limits (index/ingest/limits.py) that decide what a tag holds: a body over
# `max_bytes` or expanding past `max_expansion` is skipped, and a reused tag's stand-ins
# (a manifest for its blob) would not tell. The others are budgets of time and count
# (`max_seconds`, `max_redirects`, `max_fetches`): what the network did that day, not
# what the sources hold; a read that runs out of one fails, and its tag gets no
# fingerprint. `max_listing_entries` bounds a listing, whose stacks are a tag's requests,
# which are part of its fingerprint already.
CONTENT_LIMITS = ("max_bytes", "max_expansion")


class _Digest(Protocol):
    """What is fed: a hashlib object."""

    def update(self, data: bytes, /) -> None: ...


class RecordingOpener(Opener):
    """An opener that remembers the sha256 of each body it read, each location it
    found missing and each read that failed, for the identities of what it read
    (`tag_fingerprint`).

    With `known` (the local files an earlier build hashed, by status: digest_memo.py), a
    local file asked for its digest but not read is not read if its status is the one
    recorded. `recorded()` gives the same for the next build: the status each local file
    read or known had, where it stood still while it was read.
    """

    def __init__(self, opener: Opener, known: Mapping[str, Recorded] | None = None) -> None:
        super().__init__(opener.reader, opener.limits)
        self.digests: dict[str, str | PendingSha256 | None] = {}
        # The local files' statuses, and which locations a fingerprint asked for: only
        # those are recorded for the next build.
        self.statuses = FileStatuses(known)
        self.asked: set[str] = set()
        # Reads that failed otherwise than by a missing location (a 503, a timeout, a
        # checksum mismatch, a blob a manifest names but is missing): a tag with any of
        # them is not what its sources hold, so it gets no fingerprint.
        self.failures: dict[str, str] = {}
        # What of local mirrors is known by listing and `stat` (`take_stock`), and whether
        # reading is over: a frozen opener reads nothing more, so that a fingerprint is
        # only ever of what the ingest read.
        self.stock: dict[str, Stock | None] = {}
        # The spec manifests' stock as their reader found them (`stocked`), by folder.
        self.file_stocks: dict[str, str | None] = {}
        self.frozen = False

    def read(self, location: Location) -> bytes:
        try:
            with self._reading(location):
                data = super().read(location)
        except NotFoundError:
            self.digests[location.text] = None
            raise
        except ReadError as exc:
            self.failures[location.text] = str(exc)
            raise
        # A large body (an index.json without its .hash) is hashed beside its parse.
        pending = PendingSha256(data)
        self.digests[location.text] = pending.result() if pending.done else pending
        return data

    def read_verifying(self, location: Location, sha256: str) -> tuple[Blob, PendingCheck]:
        # `read_verified` too: it waits for this check.
        try:
            with self._reading(location):
                data, check = super().read_verifying(location, sha256)
        except ReadError as exc:  # a missing blob too: its manifest names it
            self.failures[location.text] = str(exc)
            raise
        return data, _RecordedCheck(check.location, check.sha256, check.hashing, self)

    def _reading(self, location: Location) -> AbstractContextManager[None]:
        if location.is_url:
            return nullcontext()
        return self.statuses.reading(location.text, str(location.path))

    def _read_file(self, path: Path) -> bytes:
        data, status = read_regular_status(path)
        self.statuses.opened(status)
        return data

    def _map_file(self, path: Path) -> Blob:
        # A listed blob, verified against its name: known by its status next time.
        data, status = map_regular_status(path)
        self.statuses.opened(status)
        return data

    def recorded(self) -> dict[str, Recorded]:
        """The local files whose digests a fingerprint asked for, each with the status
        that stands for the bytes of its digest (digest_memo.py), where one does."""
        found = {}
        for text in self.asked:
            status, digest = self.statuses.settled.get(text), self.digests.get(text)
            if status is None or digest is None or text in self.failures:
                continue
            if isinstance(digest, PendingSha256):
                digest = self.digests[text] = digest.result()
            found[text] = (status, digest)
        return found

    def known_digests(self) -> dict[str, str]:
        """The sha256 of each body this opener knows (read, or known by its status)."""
        return {text: found for text in self.digests if (found := self.body_digest(text))}

    def body_digest(self, text: str) -> str | None:
        """The sha256 of the body last read at the location `text` (or known by its status)."""
        digest = self.digests.get(text)
        if digest is None or text in self.failures:
            return None
        if isinstance(digest, PendingSha256):
            digest = self.digests[text] = digest.result()
        return digest

    def read_elsewhere(
        self, location: Location, sha256: str | None = None, failure: str | None = None
    ) -> None:
        self.statuses.forget(location.text)
        if failure is not None:
            self.failures[location.text] = failure
        elif sha256 is not None:
            self.digests[location.text] = sha256.lower()

    def stocked(self, folder: Location, stock: str | None) -> None:
        """Kept for the fingerprint: the files of `folder` as the ingest read them (a
        mirror listed twice in a tag is read twice: two stocks that differ stand for
        nothing)."""
        known = self.file_stocks.get(folder.text, stock)
        self.file_stocks[folder.text] = stock if known == stock else None

    def digest(self, location: Location) -> str:
        """The sha256 of the body at `location`, as read already if it was; ReadError
        again, without a second request, if reading it failed."""
        self.asked.add(location.text)
        if location.text in self.failures:
            raise ReadError(self.failures[location.text])
        if location.text not in self.digests:
            if self.frozen:
                raise ReadError(f"{location}: not read by the ingest")
            local = not location.is_url
            known = self.statuses.take(location.text, str(location.path)) if local else None
            if known is None:
                self.read(location)
            else:
                self.digests[location.text] = known
        digest = self.digests[location.text]
        if digest is None:
            raise NotFoundError(f"{location}: not found")
        if isinstance(digest, PendingSha256):
            digest = self.digests[location.text] = digest.result()
        return digest


@dataclass(frozen=True)
class _RecordedCheck(PendingCheck):
    """A check whose outcome its `RecordingOpener` keeps: the digest, or the failure."""

    opener: RecordingOpener

    def wait(self) -> None:
        try:
            super().wait()
        except ReadError as exc:
            self.opener.failures[self.location.text] = str(exc)
            raise
        self.opener.digests[self.location.text] = self.sha256.lower()


def tag_fingerprint(
    tag: str, requests: Sequence[CacheRequest], opener: Opener, salt: Iterable[object]
) -> str | None:
    """One tag's build caches, in order, with everything else its files depend on
    (`salt`: the index format, the code's revision; the limits sources are read within).
    None when one of its caches has no identity."""
    digest = hashlib.sha256()
    bounds = [getattr(opener.limits, name) for name in CONTENT_LIMITS]
    _feed(digest, "tag", tag, *bounds, *salt)
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
            elif not _is_mirror(request):
                _feed(digest, opener.digest(location))
            else:
                _mirror(location, opener, digest)
    except (ReadError, SourceFormatError, OSError, ValueError):
        return None  # reading it will say what is wrong
    return digest.hexdigest()


@dataclass(frozen=True)
class Stock:
    """What stands for the files of a local mirror that the ingest reads without its
    opener (by listing folders and reading files directly): its views' names, and the
    `FileStock` (names, sizes and times) of its spec manifests and (in a v2 mirror
    without an index) of its spec files. Taken before the ingest, so that a file
    rewritten during it makes the next build read the tag again, never gives a
    fingerprint of new content over old data; but for the spec manifests of a tag being
    read (`spec_manifests` None): their reader gives their stock, by the status of each
    as it opened it, before reading it (tarball_sizes.py), and none is looked at twice."""

    views: tuple[str, ...]
    spec_manifests: str | None
    v2_folder: Path
    spec_files: str | None  # None: it has an index.json


def take_stock(requests: Sequence[CacheRequest], opener: RecordingOpener) -> None:
    """Before a tag's ingest: the `Stock` of each of its local mirrors, into `opener`
    (but the spec manifests', which their reader gives)."""
    for request in requests:
        if _is_mirror(request) and not request.location.is_url:
            opener.stock[request.location.text] = _look(request.location, manifests=False)


def _is_mirror(request: CacheRequest) -> bool:
    location = request.location
    return not (
        request.data is not None
        or location.is_oci
        or request.kind in ("index", "spec-file")
        or (request.kind == "cache" and is_index_file(location))
    )


def _look(root: Location, manifests: bool = True) -> Stock | None:
    """A local mirror's `Stock` (without its spec manifests' unless `manifests`); None
    if a folder of it cannot be listed, or a file in it cannot be looked at."""
    try:
        views = view_names(root) if root.join(*V3_INDEX).path.is_dir() else []
        # A spec manifest per binary (a million at 1M specs), each read for its tarball's
        # size: their names, sizes and times stand for them, as reading them would not be
        # cheap. A manifest rewritten to the same size in the same nanosecond is missed.
        spec_manifests = None
        if manifests:
            spec_manifests = _stock_now(STOCK_KIND, manifest_paths(root.join(*V3_SPECS).path))
        local = v2_folder(root).path
        files = None
        if not (local / "index.json").is_file():
            paths = (str(p) for p in spec_file_paths(Location(str(local))))
            files = _stock_now("spec-files", paths)
    except (OSError, ReadError):  # a folder that cannot be listed, a file gone since
        return None
    return Stock(tuple(views), spec_manifests, local, files)


def _stock_now(kind: str, paths: Iterable[str]) -> str:
    """The `FileStock` of the files at `paths`, as they are now."""
    stock = FileStock(kind)
    for path, status in statuses_now(paths):
        stock.add_read(path, status)
    found = stock.digest()
    if found is None:
        raise ReadError(f"a {kind} file could not be looked at")
    return found


def _stock_of(root: Location, opener: RecordingOpener) -> Stock:
    """The stock taken before the ingest, else (before any ingest) taken now."""
    if root.text in opener.stock:
        stock = opener.stock[root.text]
    elif opener.frozen:
        stock = None
    else:
        stock = opener.stock[root.text] = _look(root)
    if stock is None:
        raise ReadError(f"{root}: its folders could not be listed before the ingest")
    return stock


def _mirror(root: Location, opener: RecordingOpener, digest: _Digest) -> None:
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
    stock = _stock_of(root, opener)
    for view in stock.views:
        _feed(digest, "view", view, opener.digest(index.join(view, MANIFEST)))
    specs = root.join(*V3_SPECS)
    if stock.spec_manifests is not None:  # looked at before a read (a previous build's)
        manifests: str | None = stock.spec_manifests
    else:  # as the ingest's reader read them
        manifests = opener.file_stocks.get(specs.text)
    if manifests is None:
        raise ReadError(f"{specs}: not every spec manifest was read or could be looked at")
    _feed(digest, STOCK_KIND, manifests)


def _v2(root: Location, opener: RecordingOpener, digest: _Digest) -> None:
    if root.is_url:
        # The `.hash` stands for the index (which is checked against it when read); a
        # mirror without one is known by its index's bytes.
        folder = root.join("build_cache")
        try:
            _feed(digest, "v2-hash", opener.digest(folder.join("index.json.hash")))
        except NotFoundError:
            _feed(digest, "v2", opener.digest(folder.join("index.json")))
        return
    stock = _stock_of(root, opener)
    local = Location(str(stock.v2_folder))
    try:
        hash_file = opener.digest(local.join("index.json.hash"))
    except NotFoundError:
        hash_file = ""
    try:
        _feed(digest, "v2", opener.digest(local.join("index.json")), hash_file)
    except NotFoundError:
        if stock.spec_files is None:  # it had an index when stock was taken
            raise ReadError(f"{local}: its index went during the build") from None
        _feed(digest, "spec-files", stock.spec_files)  # no index: they are read


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _feed(digest: _Digest, *values: object) -> None:
    """Each call one JSON line: no two different sequences of values feed the same bytes."""
    digest.update(json.dumps([str(v) for v in values]).encode() + b"\n")
