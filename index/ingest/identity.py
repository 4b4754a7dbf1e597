"""What a build cache holds, as one digest, found without parsing it: the fingerprints
that let a rebuild reuse the tags whose sources did not change (index/build.py).

An identity changes whenever what the ingest would read from a cache changes, and it
is cheap to find: a v3 mirror's index manifest names its blob by sha256, so the small
manifest stands for the blob; a remote v2 mirror has `index.json.hash`; a local index
or spec file is hashed whole (hashing runs ~1.5 GB/s, parsing ~0.2 GB/s), once: a later
build knows it by its status (digest_memo.py) while that does not move; the many small
files of a local mirror read past the opener (spec manifests, the spec files of a v2
mirror without an index) are known by name, size and times (`Stock`). Where it cannot be
told cheaply and for sure (an OCI registry; any read that failed), there is no identity,
and the tag is read again: a missing identity costs time, never answers.

A tag read anyway is read through a `RecordingOpener` (recording.py), which keeps the
digest of every body (and every failure) as the ingest read it, its `Stock` taken before:
its fingerprint is then found from what was read, reading nothing twice and nothing after.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Protocol

from cachegql.index.ingest.buildcache import V3_SPECS, spec_file_paths, v2_folder, view_names
from cachegql.index.ingest.file_stock import FileStock, statuses_now
from cachegql.index.ingest.index_manifests import index_manifest_blob
from cachegql.index.ingest.listed_indexes import MANIFEST, V3_INDEX, is_index_file, manifest_root
from cachegql.index.ingest.locations import (
    Location,
    NotFoundError,
    Opener,
    ReadError,
)
from cachegql.index.ingest.manifest_listing import manifest_folders
from cachegql.index.ingest.recognise import CacheRequest
from cachegql.index.ingest.recording import RecordingOpener, Stock
from cachegql.index.ingest.spackdb import SourceFormatError
from cachegql.index.ingest.tarball_sizes import STOCK_KIND
from cachegql.index.records import Problem

__all__ = [
    "CONTENT_LIMITS",
    "RecordingOpener",
    "Stock",
    "cache_identity",
    "local_mirrors",
    "look",
    "spec_manifest_stocks",
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


def tag_fingerprint(
    tag: str,
    requests: Sequence[CacheRequest],
    opener: Opener,
    salt: Iterable[object],
    *,
    looked: bool = True,
) -> str | None:
    """One tag's build caches, in order, with everything else its files depend on
    (`salt`: the index format, the code's revision; the limits sources are read within).
    None when one of its caches has no identity.

    Without `looked`: the tag's *index fingerprint*, of its caches' indexes alone (index
    files, `index.json.hash`, v3 index manifests and local blobs), not of what a local
    mirror is known by through listing and `stat` (`Stock`: its views, its spec manifests,
    a million `stat`s at 1M specs, its spec files). It is cheap, and covers a part of what
    the fingerprint covers: where it moved, the tag changed (index/tag_checks.py).
    """
    digest = hashlib.sha256()
    bounds = [getattr(opener.limits, name) for name in CONTENT_LIMITS]
    _feed(digest, "tag" if looked else "tag-indexes", tag, *bounds, *salt)
    recording = opener if isinstance(opener, RecordingOpener) else RecordingOpener(opener)
    for request in requests:
        identity = cache_identity(request, recording, looked=looked)
        if identity is None:
            return None
        _feed(digest, identity)
    return digest.hexdigest()


def cache_identity(
    request: CacheRequest, opener: RecordingOpener, *, looked: bool = True
) -> str | None:
    """The identity of one build cache as the ingest would read it (its kind, label and
    location are part of it: they are in its records and problems), or None; without
    `looked`, of its indexes alone (`tag_fingerprint`)."""
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
                root = manifest_root(location)
                if root is not None and not location.is_url:  # an index manifest
                    _index_blob(location, root, opener, digest)
            else:
                _mirror(location, opener, digest, looked)
    except (ReadError, SourceFormatError, OSError, ValueError):
        return None  # reading it will say what is wrong
    return digest.hexdigest()


def take_stock(requests: Sequence[CacheRequest], opener: RecordingOpener) -> None:
    """Before a tag's ingest: the `Stock` of each of its local mirrors, into `opener`
    (but the spec manifests', which their reader gives)."""
    for root in local_mirrors(requests):
        opener.stock[root.text] = look(root, manifests=False)


def local_mirrors(requests: Iterable[CacheRequest]) -> list[Location]:
    """The roots of the local mirrors among `requests`, in order: those a fingerprint
    `look`s at (before their tag's ingest)."""
    return [
        request.location
        for request in requests
        if _is_mirror(request) and not request.location.is_url
    ]


def spec_manifest_stocks(opener: RecordingOpener) -> dict[str, str]:
    """The `FileStock` of each local v3 mirror's spec manifests, by their folder, as
    `opener` looked at them for a fingerprint (before an ingest)."""
    return {
        Location(root).join(*V3_SPECS).text: stock.spec_manifests
        for root, stock in opener.stock.items()
        if stock is not None and stock.spec_manifests is not None
    }


def _is_mirror(request: CacheRequest) -> bool:
    location = request.location
    return not (
        request.data is not None
        or location.is_oci
        or request.kind in ("index", "spec-file")
        or (request.kind == "cache" and is_index_file(location))
    )


def look(root: Location, manifests: bool = True) -> Stock | None:
    """A local mirror's `Stock` (without its spec manifests' unless `manifests`); None
    if a folder of it cannot be listed, or a file in it cannot be looked at."""
    try:
        views = view_names(root) if root.join(*V3_INDEX).path.is_dir() else []
        # A spec manifest per binary (a million at 1M specs), each read for its tarball's
        # size: their names and statuses stand for them (file_stock.py), as reading them
        # would not be cheap.
        spec_manifests = None
        if manifests:
            unlisted: list[Problem] = []
            stock = FileStock(STOCK_KIND)
            for folder, names in manifest_folders(root.join(*V3_SPECS).path, unlisted):
                stock.add_folder(folder, names)
            spec_manifests = _digest_of(stock, STOCK_KIND)
            if unlisted:  # the ingest reports it, and the tag is read again each time
                return None
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
    return _digest_of(stock, kind)


def _digest_of(stock: FileStock, kind: str) -> str:
    """The digest of `stock`; ReadError when one of its files could not be looked at."""
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
        stock = opener.stock[root.text] = (opener.look or look)(root)
    if stock is None:
        raise ReadError(f"{root}: its folders could not be listed before the ingest")
    return stock


def _mirror(root: Location, opener: RecordingOpener, digest: _Digest, looked: bool) -> None:
    """Layout v3 first, then v2, as `read_mirror` tries them; without `looked`, what of
    it is read through the opener alone (`tag_fingerprint`)."""
    index = root.join(*V3_INDEX)
    try:
        manifest = opener.digest(index.join(MANIFEST))
    except NotFoundError:
        _v2(root, opener, digest, looked)
        return
    _feed(digest, "v3", manifest)
    if root.is_url:
        return  # views, spec manifests and blobs by their status: local mirrors only
    _index_blob(index.join(MANIFEST), root, opener, digest)
    if not looked:
        return
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


def _index_blob(
    manifest: Location, root: Location, opener: RecordingOpener, digest: _Digest
) -> None:
    """A local v3 index blob by its own digest, beside its manifest's: known by its status
    once a build read it (as a listed blob is), so that its part (cache_parts.py) is only
    taken for the bytes a full build would read, and a blob damaged since is read again
    (and refused). A remote blob is known by its manifest alone, and keeps no part."""
    blob, _ = index_manifest_blob(manifest, root, opener)
    before = opener.statuses.known.get(manifest.text)
    changed = before is not None and before[1] != opener.digest(manifest)
    if not opener.frozen and changed and blob.text not in opener.statuses.known:
        # Before the ingest, a blob the last build did not record, named by a manifest
        # that changed since, makes the fingerprint differ already: it is not hashed here
        # to be read again (a blob recorded is known by its status, and may have a part).
        _feed(digest, "blob", "after a changed manifest")
        return
    _feed(digest, "blob", opener.digest(blob))


def _v2(root: Location, opener: RecordingOpener, digest: _Digest, looked: bool) -> None:
    if root.is_url:
        # The `.hash` stands for the index (which is checked against it when read); a
        # mirror without one is known by its index's bytes.
        folder = root.join("build_cache")
        try:
            _feed(digest, "v2-hash", opener.digest(folder.join("index.json.hash")))
        except NotFoundError:
            _feed(digest, "v2", opener.digest(folder.join("index.json")))
        return
    # Its folder as its `Stock` found it (else as `look` finds it: no `Stock` is taken).
    stock = _stock_of(root, opener) if looked else None
    local = Location(str(stock.v2_folder)) if stock is not None else v2_folder(root)
    try:
        hash_file = opener.digest(local.join("index.json.hash"))
    except NotFoundError:
        hash_file = ""
    try:
        _feed(digest, "v2", opener.digest(local.join("index.json")), hash_file)
    except NotFoundError:
        if stock is None:  # its spec files: known by their `Stock` alone
            return
        if stock.spec_files is None:  # it had an index when stock was taken
            raise ReadError(f"{local}: its index went during the build") from None
        _feed(digest, "spec-files", stock.spec_files)  # no index: they are read


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _feed(digest: _Digest, *values: object) -> None:
    """Each call one JSON line: no two different sequences of values feed the same bytes."""
    digest.update(json.dumps([str(v) for v in values]).encode() + b"\n")
