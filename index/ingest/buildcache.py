"""Spack build caches as sources: index files, mirrors (layouts v2 and v3), listings.

- An index file: `index.json`, any database version Spack wrote (5 to 9).
- A mirror, layout v3 (Spack 1.0+): `v3/manifests/index/index.manifest.json` names the
  index blob `blobs/<algorithm>/<checksum[:2]>/<checksum>` by its checksum (verified)
  and media type (the newest supported database version is taken); views
  `v3/manifests/index/<view>/` are per-stack indexes; spec manifests
  `v3/manifests/spec/<name>/<name>-<version>-<hash>.spec.manifest.json` carry the tarball's
  size. A mirror root is tried as v3, then as v2, as Spack does.
- A mirror, layout v2: `build_cache/index.json`, checked against `index.json.hash` when
  that exists; without an index, its spec files, as `spack buildcache update-index` reads
  them.
- A listing (binaries.spack.io's `cache_spack_io_index.json`): `{"<tag>": [{"label":
  "<stack>", "url": "<index file or mirror root>"}]}`. Since layout v3 its generator names
  each stack's index blob (`<mirror>/blobs/sha256/<checksum[:2]>/<checksum>`): read as an
  index file whose name is its checksum (verified), its binaries in the mirror at `<mirror>`.
  An index manifest named instead is read for the blob it names.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path

from cachegql.index.ingest.cache_parts import CacheParts
from cachegql.index.ingest.files import Blob, read_regular, reason
from cachegql.index.ingest.index_manifests import index_manifest_blob
from cachegql.index.ingest.inflate import inflated, verifying_blob
from cachegql.index.ingest.listed_indexes import (
    MANIFEST,
    V3_INDEX,
    IndexBlob,
    index_blob,
    is_index_file,
    manifest_root,
)
from cachegql.index.ingest.locations import Location, NotFoundError, Opener, PendingCheck, ReadError
from cachegql.index.ingest.seen_nodes import SeenNodes
from cachegql.index.ingest.spackdb import (
    Database,
    PartEntry,
    SourceFormatError,
    read_database,
    read_spec_file,
)
from cachegql.index.ingest.tarball_sizes import PendingSizes
from cachegql.index.ingest.view_binaries import (
    ViewBlob,
    held_binaries,
    view_outcome,
)
from cachegql.index.records import Problem

__all__ = [
    "CacheData",
    "cache_data",
    "placed",
    "read_cache",
    "read_index_file",
    "read_mirror",
    "read_spec_files",
    "spec_file_paths",
    "v2_folder",
    "view_names",
]

V3_SPECS = ("v3", "manifests", "spec")
SPEC_FILE_SUFFIXES = (".spec.json", ".spec.json.sig", ".spec.yaml")


@dataclass
class CacheData:
    """What one build cache gave: its DAG, which binaries each stack label holds, sizes."""

    source: str
    database: Database
    stacks: dict[str, AbstractSet[str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    # Where its binaries live and in which layout (index/binary_urls.py), if known.
    base: str | None = None
    layout: str | None = None
    # The peak memory of a process that read its spec manifests beside this one, if any.
    helper_rss_mb: int = 0


def binaries(database: Database) -> set[str]:
    return {digest for digest, node in database.nodes.items() if node.in_buildcache}


def cache_data(database: Database, label: str) -> CacheData:
    """A database read on its own: all of its binaries in the stack `label`."""
    return CacheData(database.source, database, {label: binaries(database)})


def read_index_file(
    location: Location,
    opener: Opener,
    label: str,
    seen: SeenNodes | None = None,
    parts: CacheParts | None = None,
) -> CacheData:
    """One index file, all of its binaries in the stack `label`; with `parts`, taken from
    its part where there is one, else read and kept as one (index/ingest/cache_parts.py).
    An index blob is verified against the checksum it is named by, and a v3 index
    manifest gives the blob it names."""
    root = manifest_root(location)
    if root is None:
        blob = index_blob(location)
    else:  # its blob, where local, is known by its status as a listed blob is
        location, checksum = index_manifest_blob(location, root, opener)
        blob = IndexBlob(root, checksum)
    expected = None if blob is None else blob.sha256
    kept = None if location.is_url and root is not None else parts  # identity.py `_index_blob`
    database = _index_database(location, str(location), opener, seen, kept, expected)
    return placed(cache_data(database, label), blob)


def _index_database(
    location: Location,
    source: str,
    opener: Opener,
    seen: SeenNodes | None,
    parts: CacheParts | None,
    expected: str | None = None,
    inflate: bool = True,
) -> Database:
    """The database of the index at `location`: from its part where `parts` has one that
    the build knows the index by, else read (parsed while it is checked against the sha256
    `expected`, where one is given; with `inflate`, inflated when gzipped: a blob, an index
    file given alone, never a v2 mirror's `index.json`) and kept as a part. A part is
    named by whether its bytes were to be inflated: the same bytes read either way differ."""
    known = None if expected is None else expected.lower()  # as the build knows digests
    if parts is not None:
        database = parts.load(location, source, seen, opener, known, inflated=inflate)
        if database is not None:
            return database
    entries: list[PartEntry] | None = [] if parts is not None else None
    if expected is None:
        body: Blob = opener.read(location)
        if inflate:  # an index file given alone, gzipped (`index.json.gz`)
            body = inflated(body, location, opener)
        database = _database(body, source, seen, part=entries)
        sha256 = opener.body_digest(location.text)
    else:
        verify = verifying_blob(location, expected, opener) if inflate else None
        with verify or opener.verifying(location, expected) as (data, check):
            database = _database(data, source, seen, check, entries)
        sha256 = known
    if parts is not None and entries is not None:
        parts.keep(sha256, database, entries, keyed=seen is not None, inflated=inflate)
    return database


def placed(data: CacheData, blob: IndexBlob | None) -> CacheData:
    """An index file's binaries are beside it, as in a v2 `build_cache` folder; an index
    blob's, in its v3 mirror."""
    if blob is None:
        data.base, data.layout = Location(data.source).without_query.rsplit("/", 1)[0], "v2"
    else:
        data.base, data.layout = str(blob.root), "v3"
    return data


def read_cache(
    location: Location,
    opener: Opener,
    label: str,
    seen: SeenNodes | None = None,
    parts: CacheParts | None = None,
) -> CacheData:
    """An index file (a `.json` location) or a mirror root. `seen`: the nodes the tag's
    other caches gave, not read again (index/ingest/seen_nodes.py); `parts`: index files
    read by an earlier build (index/ingest/cache_parts.py)."""
    if is_index_file(location):
        return read_index_file(location, opener, label, seen, parts)
    return read_mirror(location, opener, label, seen, parts)


def read_mirror(
    location: Location,
    opener: Opener,
    label: str,
    seen: SeenNodes | None = None,
    parts: CacheParts | None = None,
) -> CacheData:
    """A mirror root: layout v3 when it has an index manifest, else layout v2; with
    `parts`, its index is taken as read where the build knows its bytes."""
    try:
        return _read_v3(location, opener, label, seen, parts)
    except NotFoundError:
        pass
    try:
        return _read_v2(location, opener, label, seen, parts)
    except NotFoundError:
        raise ReadError(
            f"{location}: no build cache there: neither {'/'.join((*V3_INDEX, MANIFEST))} "
            "(layout v3) nor build_cache/index.json or spec files (layout v2)"
        ) from None


def _read_v3(
    root: Location, opener: Opener, label: str, seen: SeenNodes | None, parts: CacheParts | None
) -> CacheData:
    manifest = root.join(*V3_INDEX, MANIFEST)
    blob, checksum = index_manifest_blob(manifest, root, opener)
    if root.is_url:  # its blob is known by its manifest alone (identity.py `_index_blob`)
        parts = None
    # Views and spec manifests are found by listing folders: local mirrors only. The
    # manifests' sizes and the views' binaries are read while the index is parsed
    # (tarball_sizes.py, view_binaries.py), unless the sizes are taken from their part.
    views = [] if root.is_url else _view_blobs(root, opener)
    readable = [view for view in views if isinstance(view, ViewBlob)]
    specs = root.join(*V3_SPECS)
    # A stock still being looked at is waited for once the index is read (not before).
    later = parts is not None and not root.is_url and parts.stock_later(specs)
    kept = None if root.is_url or parts is None or later else parts.load_sizes(specs)
    sizes = (
        None
        if root.is_url or kept is not None or later
        else PendingSizes(specs.path, views=readable, limits=opener.limits)
    )
    problems: list[Problem] = []
    try:
        # Parsed while its checksum is verified beside: the database stands once it is.
        try:
            database = _index_database(blob, str(manifest), opener, seen, parts, checksum)
        except NotFoundError as exc:  # not to be tried as layout v2, and called no mirror
            raise ReadError(f"{manifest} names an index blob that is missing ({exc})") from None
        if later and parts is not None:
            kept = parts.load_sizes(specs)
            if kept is None:  # read now, after the index rather than beside it
                sizes = PendingSizes(specs.path, views=readable, limits=opener.limits)
        data = CacheData(
            str(root), database, {label: binaries(database)}, base=root.without_query, layout="v3"
        )
        if kept is not None:
            (data.sizes, problems), stock = kept
            opener.stocked(specs, stock)
            if parts is not None:
                parts.took_sizes(specs)
            outcomes = iter([view_outcome(view, opener) for view in readable])
        elif sizes is not None:
            sizes.read_views_here(lambda view: view_outcome(view, opener))
            data.sizes, problems = sizes.result()
            data.helper_rss_mb = sizes.peak_rss_mb
            opener.stocked(specs, sizes.stock)
            if parts is not None:
                parts.keep_sizes(specs, sizes.stock, (data.sizes, problems))
            outcomes = iter(sizes.view_outcomes_read(opener))
        else:
            outcomes = iter(())
        for view in views:
            if isinstance(view, Problem):
                data.problems.append(view)
                continue
            outcome = next(outcomes)
            if outcome.problem is not None:
                data.problems.append(Problem(view.source, f"view skipped: {outcome.problem}"))
            else:
                data.stacks[view.name] = held_binaries(outcome, view, database, data.problems)
    except BaseException:
        if sizes is not None:
            sizes.cancel()
        raise
    data.problems.extend(problems)
    return data


def _view_blobs(root: Location, opener: Opener) -> list[ViewBlob | Problem]:
    """The blob each view's manifest names, or why the view is skipped, in view order."""
    views: list[ViewBlob | Problem] = []
    for name in view_names(root):
        folder = root.join(*V3_INDEX, name)
        try:
            blob, checksum = index_manifest_blob(folder.join(MANIFEST), root, opener)
        except (ReadError, SourceFormatError) as exc:
            views.append(Problem(str(folder), f"view skipped: {exc}"))
        else:
            views.append(ViewBlob(name, str(folder), blob, checksum))
    return views


def _read_v2(
    root: Location,
    opener: Opener,
    label: str,
    seen: SeenNodes | None,
    parts: CacheParts | None = None,
) -> CacheData:
    folder = v2_folder(root)
    index = folder.join("index.json")
    try:
        expected = opener.read(folder.join("index.json.hash")).decode("ascii", "replace").strip()
    except NotFoundError:
        expected = None
    try:
        # A remote index with a `.hash` is known by the `.hash` alone (identity.py), never
        # by its bytes: no part of it would be taken.
        kept = None if folder.is_url and expected is not None else parts
        database = _index_database(index, str(index), opener, seen, kept, expected, inflate=False)
    except NotFoundError:  # from the reads: a parse raises no NotFoundError
        if folder.is_url or not _has_spec_files(folder):
            raise
        database = read_spec_files(folder)
    return CacheData(
        str(root), database, {label: binaries(database)}, base=str(folder), layout="v2"
    )


def _has_spec_files(folder: Location) -> bool:
    return folder.path.is_dir() and any(_spec_files(folder))


def _spec_files(folder: Location) -> Iterator[Location]:
    for path in sorted(_listing(folder)):
        if path.name.endswith(SPEC_FILE_SUFFIXES) and _is_file(path):
            yield Location(str(path))


def _is_file(path: Path) -> bool:
    """A regular file (links followed); not one if it cannot even be looked at."""
    try:
        return path.is_file()
    except OSError:
        return False


def _listing(folder: Location) -> list[Path]:
    """The entries of a local folder; ReadError (a problem, not a crash) if unreadable."""
    try:
        return list(folder.path.iterdir())
    except OSError as exc:
        raise ReadError(f"{folder}: cannot read folder ({reason(exc)})") from None


# A spec file is one spec and its dependencies' specs: tens of KB. A file far larger is
# not one, and is not read (a sparse one of 64 GiB would be, whole, and end the build).
SPEC_FILE_MAX_BYTES = 64 << 20


def read_spec_files(folder: Location) -> Database:
    """A mirror without an index, as `spack buildcache update-index` builds one."""
    database = Database(source=str(folder), version=None)
    for location in _spec_files(folder):
        try:
            data = read_regular(location.path, SPEC_FILE_MAX_BYTES)
            database.merge(read_spec_file(data, str(location)))
        except OSError as exc:
            database.problems.append(Problem(str(location), f"spec file skipped: {reason(exc)}"))
        except SourceFormatError as exc:
            database.problems.append(Problem(str(location), f"spec file skipped: {exc}"))
    return database


def _database(
    data: Blob,
    source: str,
    seen: SeenNodes | None = None,
    check: PendingCheck | None = None,
    part: list[PartEntry] | None = None,
) -> Database:
    try:
        return read_database(data, source, seen, check, part)
    except SourceFormatError as exc:
        raise SourceFormatError(f"{source}: {exc}") from None


def v2_folder(root: Location) -> Location:
    """The folder of a v2 mirror's index or spec files (the readers and the fingerprints
    of index/ingest/identity.py find the same files through these three)."""
    if root.is_url or (not (root.path / "index.json").is_file() and not _has_spec_files(root)):
        return root.join("build_cache")
    return root


def spec_file_paths(folder: Location) -> list[Path]:
    """The spec files `read_spec_files` reads in a local folder, in its order."""
    return [location.path for location in _spec_files(folder)] if folder.path.is_dir() else []


def view_names(root: Location) -> list[str]:
    """The views of a local v3 mirror, in the order they are read."""
    return sorted(p.name for p in _listing(root.join(*V3_INDEX)) if (p / MANIFEST).is_file())
