"""Recognise sources by their content: the page files to try and the build caches to read.

A source is a local path or a URL. A folder is a mirror root (layouts v2 and v3) or a folder
walked for pages; a file is a spec file, a build-cache index, a listing of build caches by
tag and stack, or a page; a URL is read once to tell which, and an unrecognised one is
tried as a mirror root. A lone build cache takes its tag and stack from the caller.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import orjson

from cachegql.index.errors import shorten
from cachegql.index.ingest.buildcache import SPEC_FILE_SUFFIXES
from cachegql.index.ingest.files import read_head, read_regular, reason
from cachegql.index.ingest.inflate import GZIP_MAGIC, gunzip, gzip_start
from cachegql.index.ingest.listed_indexes import manifest_root
from cachegql.index.ingest.listings import ListingEntry, is_listing, json_error, read_listing
from cachegql.index.ingest.locations import (
    NETWORK_SCHEMES,
    Location,
    NotFoundError,
    Opener,
    ReadError,
    scheme_of,
)
from cachegql.index.ingest.sources import Candidate, SourceError, iter_candidates
from cachegql.index.ingest.spackdb import UTF8_BOM, SourceFormatError
from cachegql.index.records import Problem

__all__ = [
    "DEFAULT_STACK",
    "HEAD_ONLY_FROM",
    "UTF8_BOM",
    "CacheRequest",
    "Plan",
    "plan_sources",
    "without_location",
]

# The stack of a lone build cache, as cache.spack.io labels its top-level mirror.
DEFAULT_STACK = "root"
# An index from this size on is told by its head (`{"database":`, as Spack writes it) and
# read by the ingest a record at a time: parsed whole to tell what it is, an index took
# some ten times its size in memory (900 MB for 90 MB; 1M specs are 1.8 GB of index).
# Smaller JSON is still parsed whole, which costs little and tells a broken file by the
# position of its error in the whole document.
HEAD_ONLY_FROM = 1 << 20
_GZIP_HEAD = 1 << 20  # compressed bytes read to tell what a gzip file holds
_SIGNED = b"-----BEGIN PGP SIGNED MESSAGE"
_INDEX_HEAD = re.compile(rb'\{\s*"database"\s*:')  # on a head stripped of its spaces


@dataclass(frozen=True, slots=True)
class CacheRequest:
    """A build cache to read for one tag and stack label."""

    tag: str
    label: str
    location: Location
    kind: Literal["index", "mirror", "spec-file", "cache"]
    data: bytes | None = None  # already read while recognising the source


@dataclass
class Plan:
    """The sources, recognised: page files to try and build caches to read."""

    candidates: list[Candidate] = field(default_factory=list)
    caches: list[CacheRequest] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def plan_sources(
    sources: Sequence[str | Path],
    *,
    opener: Opener,
    tag: str | None = None,
    stack: str = DEFAULT_STACK,
) -> Plan:
    """Recognise each source by its content; raise SourceError for one that cannot be used."""
    plan = Plan()
    for source in sources:
        location = Location.of(source)
        if location.is_url:
            _plan_url(location, plan, opener, tag, stack)
        else:
            _plan_path(location, plan, opener, tag, stack)
    return plan


def _plan_path(location: Location, plan: Plan, opener: Opener, tag: str | None, stack: str) -> None:
    """A local source: a mirror folder, a file recognised by its start, or a folder of
    pages; anything else (missing: SourceError; a pipe, a device, unreadable: a problem)
    as `iter_candidates` tells it."""
    path = location.path
    status = _status(path)
    scheme = scheme_of(location.text)
    if status is None and scheme is not None and location.text.startswith(f"{scheme}://"):
        raise SourceError(
            f"{shorten(location.text)}: {scheme}:// is not a source cachegql reads: give a "
            f"path, or a URL of {', '.join(f'{s}://' for s in NETWORK_SCHEMES)}"
        )
    if status is not None and stat.S_ISDIR(status.st_mode) and _is_mirror_folder(path):
        plan.caches.append(_lone(location, "mirror", tag, stack))
    elif status is not None and stat.S_ISREG(status.st_mode):
        _plan_file(location, status.st_size, plan, opener, tag, stack)
    else:
        plan.candidates.extend(iter_candidates([path], plan.problems))


def _status(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _lone(
    location: Location,
    kind: Literal["index", "mirror", "spec-file", "cache"],
    tag: str | None,
    stack: str,
    data: bytes | None = None,
) -> CacheRequest:
    if tag is None:
        what = {"index": "index file", "mirror": "mirror", "spec-file": "spec file"}.get(kind, "")
        raise SourceError(
            f"{location} is a Spack build cache ({what}), which does not say which tag (snapshot) "
            "its specs belong to: give it with --tag TAG (e.g. --tag develop), and its stack "
            f"with --stack LABEL (default {DEFAULT_STACK})"
        )
    return CacheRequest(tag, stack, location, kind, data)


def _is_mirror_folder(folder: Path) -> bool:
    """A mirror root of layout v3 or v2, or a v2 `build_cache` folder itself.

    A folder that cannot be listed is not one: walked for pages, it is reported there.
    """
    try:
        return (
            (folder / "v3" / "manifests" / "index").is_dir()
            or (folder / "build_cache").is_dir()
            or (folder / "index.json").is_file()
            or any(p.name.endswith(SPEC_FILE_SUFFIXES) for p in folder.iterdir() if p.is_file())
        )
    except OSError:
        return False


def _plan_file(
    location: Location, size: int, plan: Plan, opener: Opener, tag: str | None, stack: str
) -> None:
    path = location.path
    if path.name.endswith(SPEC_FILE_SUFFIXES):
        plan.caches.append(_lone(location, "spec-file", tag, stack))
        return
    try:
        start = read_head(path, 64)
        head = start.removeprefix(UTF8_BOM).lstrip()
        if head.startswith(_SIGNED):
            plan.caches.append(_lone(location, "spec-file", tag, stack))
        elif start.startswith(GZIP_MAGIC):
            _plan_gzip(location, None, plan, opener, tag, stack)
        elif _is_large_index(start, size):
            plan.caches.append(_lone(location, "index", tag, stack))
        elif head.startswith((b"{", b"[")) or path.suffix == ".json":
            # JSON, or named so (a damaged index.json is not a page): what it is takes
            # reading it whole
            _plan_json(location, read_regular(path), plan, opener, tag, stack)
        else:
            plan.candidates.append(Candidate(path, expected=True))
    except OSError as exc:
        plan.problems.append(Problem(str(location), f"cannot read ({reason(exc)}); skipped"))


def _plan_url(location: Location, plan: Plan, opener: Opener, tag: str | None, stack: str) -> None:
    try:
        with opener.source():
            data = opener.read(location)
    except NotFoundError:
        plan.caches.append(_lone(location, "mirror", tag, stack))  # a root: v3, then v2
        return
    except ReadError as exc:
        plan.problems.append(Problem(str(location), without_location(str(location), str(exc))))
        return
    head = data[:64].removeprefix(UTF8_BOM).lstrip()
    if _is_large_index(data[:64], len(data)):
        plan.caches.append(_lone(location, "index", tag, stack, data))
    elif head.startswith((b"{", b"[")):
        _plan_json(location, data, plan, opener, tag, stack)
    elif head.startswith(_SIGNED):
        plan.caches.append(_lone(location, "spec-file", tag, stack, data))
    elif head.startswith(b"---"):
        plan.candidates.append(Candidate(Path(location.text), expected=True, data=data))
    elif data.startswith(GZIP_MAGIC):
        _plan_gzip(location, data, plan, opener, tag, stack)
    else:  # an HTML folder listing, or anything else: try it as a mirror root
        plan.caches.append(_lone(location, "mirror", tag, stack))


def _plan_gzip(
    location: Location,
    body: bytes | None,
    plan: Plan,
    opener: Opener,
    tag: str | None,
    stack: str,
) -> None:
    """A local file (`body` None) or a body compressed with gzip (`index.json.gz`, a v3
    blob): told by what its start inflates to. An index is inflated by the ingest as it
    reads it (a local one is then known by its file's digest, as any index, and a blob
    checked against its name as stored first); a listing or spec file, small, is inflated
    here within the limits and taken as that JSON would be. A page is never compressed."""
    try:
        head = read_head(location.path, _GZIP_HEAD) if body is None else body[:_GZIP_HEAD]
        start = gzip_start(head, 64).removeprefix(UTF8_BOM).lstrip()
        if _INDEX_HEAD.match(start):
            plan.caches.append(_lone(location, "index", tag, stack, body))
        elif start.startswith((b"{", b"[", _SIGNED)):
            compressed = read_regular(location.path) if body is None else body
            data = gunzip(compressed, str(location), opener.limits)
            if start.startswith(_SIGNED):
                plan.caches.append(_lone(location, "spec-file", tag, stack, data))
            else:  # an index laid out otherwise is read as stored, as above
                _plan_json(location, data, plan, opener, tag, stack, gzipped=True, body=body)
        else:
            why = "compressed with gzip, but holds no JSON; skipped"
            plan.problems.append(Problem(str(location), why))
    except SourceFormatError as exc:
        message = without_location(str(location), str(exc)).removesuffix("; not read")
        plan.problems.append(Problem(str(location), f"{message}; skipped"))


def _is_large_index(start: bytes, size: int) -> bool:
    """Whether a file or body of `size` bytes starting with `start` is an index to read a
    record at a time, not parsed whole to tell what it is (`HEAD_ONLY_FROM`). Not with a
    byte order mark, which only the whole parse takes off (`_plan_json`)."""
    return size >= HEAD_ONLY_FROM and _INDEX_HEAD.match(start.lstrip()) is not None


def _plan_json(
    location: Location,
    data: bytes,
    plan: Plan,
    opener: Opener,
    tag: str | None,
    stack: str,
    *,
    gzipped: bool = False,
    body: bytes | None = None,
) -> None:
    """`data` as the JSON it is. Inflated from gzip (`gzipped`), an index is planned with
    its bytes as stored: the `body` read, or (None) its file, for the ingest to read."""
    # JSON has no byte order mark, but editors on Windows write one (RFC 8259 lets a parser
    # ignore it): the readers after this one get the document without it.
    data = data.removeprefix(UTF8_BOM)
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        plan.problems.append(Problem(str(location), json_error(exc)))
        return
    if isinstance(document, dict) and "database" in document:
        plan.caches.append(_lone(location, "index", tag, stack, body if gzipped else data))
    elif manifest_root(location) is not None and isinstance(document, dict) and "data" in document:
        plan.caches.append(_lone(location, "cache", tag, stack))  # read for its blob
    elif isinstance(document, dict) and "spec" in document:
        plan.caches.append(_lone(location, "spec-file", tag, stack, data))
    elif is_listing(document):
        try:
            limit = opener.limits.max_listing_entries
            entries, problems = read_listing(data, location, limit, opener.url_map)
        except SourceFormatError as exc:
            plan.problems.append(Problem(str(location), str(exc)))
            return
        plan.problems.extend(problems)
        plan.caches.extend(_entry(entry) for entry in entries)
    else:
        plan.problems.append(
            Problem(
                str(location),
                "JSON that is neither a Spack build-cache index ('database'), a spec file "
                "('spec') nor a cache listing ({tag: [{label, url}]}); skipped",
            )
        )


def _entry(entry: ListingEntry) -> CacheRequest:
    return CacheRequest(entry.tag, entry.label, entry.location, "cache")


def without_location(location: str, message: str) -> str:
    """A reader's message without the location it starts with, for a problem that names it."""
    return message.removeprefix(f"{location}: ")
