"""Where sources are read from: local paths, and URLs through a reader the caller supplies.

Origin rules: a location read from the network (an http(s) URL) may only name other
network locations; a `file://` URL, any other scheme, or a path it names is resolved
against its own URL (a path) or refused (`OriginError`), never read from this machine.
A local location may name local paths, `file://` URLs and network URLs.

The index knows nothing of HTTP: `cachegql index` passes a `Reader` (the server's HTTP
client, with its timeouts, retries and cache) for the http(s) URLs among the sources.
Local files are read here, regular files only (a named pipe or a device is refused
rather than read forever). Either way, a failure is a `ReadError` that names the
location and says what went wrong.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar
from urllib.parse import unquote, urljoin, urlparse

from cachegql.index.ingest.files import (
    Blob,
    NotRegularFileError,
    PendingSha256,
    map_regular,
    read_regular,
    reason,
)
from cachegql.index.ingest.limits import SourceLimits

__all__ = [
    "NETWORK_SCHEMES",
    "OCI_SCHEMES",
    "Location",
    "NotFoundError",
    "Opener",
    "OriginError",
    "PendingCheck",
    "ReadError",
    "Reader",
    "UrlMap",
    "check_sha256",
    "without_query",
]

# Every kind of location read through the caller's `Reader`, never from the local disk:
# http(s), OCI registries (`oci://` as Spack writes it, `oci+http://` for a registry
# without TLS) and S3 buckets. A source read from the network may only name these.
OCI_SCHEMES = ("oci", "oci+http")
NETWORK_SCHEMES = ("http", "https", *OCI_SCHEMES, "s3")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_T = TypeVar("_T")
# When the source being read must be read by (time.monotonic()), for every read of it.
_SOURCE_DEADLINE: ContextVar[float | None] = ContextVar("source_deadline", default=None)


class ReadError(Exception):
    """A location that could not be read; the message names it and says why."""


class NotFoundError(ReadError):
    """The location does not exist (a missing file, an HTTP 404)."""


class OriginError(ReadError):
    """A location read from the network names one that is not on the network."""


class Reader(Protocol):
    """Reads http(s) URLs, each read done by `deadline` (a `time.monotonic()` instant:
    the end of the source's time budget) when one is given."""

    def read(self, url: str, deadline: float | None = None) -> bytes:
        """The body at `url`; raise ReadError (NotFoundError for a 404)."""

    def read_verified(self, url: str, sha256: str, deadline: float | None = None) -> bytes:
        """The body at `url`, which must have this sha256 (a cached copy may be used)."""


@dataclass(frozen=True, slots=True)
class Location:
    """A file or folder to read: an http(s) URL or a local path."""

    text: str

    @classmethod
    def of(cls, source: str | Path) -> Location:
        text = str(source)
        if scheme_of(text) == "file":
            text = unquote(urlparse(text).path)
        return cls(text)

    @property
    def is_url(self) -> bool:
        """Whether this is read from the network (see NETWORK_SCHEMES)."""
        return scheme_of(self.text) in NETWORK_SCHEMES

    @property
    def is_oci(self) -> bool:
        """An OCI registry's repository (or an image in it), read as Spack reads one."""
        return scheme_of(self.text) in OCI_SCHEMES

    @property
    def path(self) -> Path:
        return Path(self.text)

    @property
    def name(self) -> str:
        """The last segment of its path (a URL's, without its query)."""
        return self.without_query.rstrip("/").rsplit("/", 1)[-1]

    @property
    def without_query(self) -> str:
        """The text, but for an http(s) URL's query and fragment (`?X-Amz-Signature=...`,
        a presigned URL's, or `?token=...`); an `s3://` key's `?` and `#` are its own."""
        return without_query(self.text)

    def join(self, *parts: str) -> Location:
        """A location below this one (this one taken as a folder). A URL's query is not
        carried over: a signature is for one object, and a token must not reach the URLs
        the index publishes."""
        if self.is_url:
            return Location(self.without_query.rstrip("/") + "/" + "/".join(parts))
        return Location(str(self.path.joinpath(*parts)))

    def sibling(self, reference: str) -> Location:
        """`reference` (a URL, `file://` URL or path) read from this file's folder.

        Raises OriginError where this location is on the network and `reference` is not.
        """
        scheme = scheme_of(reference)
        if scheme in NETWORK_SCHEMES:
            return Location.of(reference)
        if self.is_url:
            if scheme is None:  # a path: on the same server, as a browser would take it
                return Location(_urljoin(self.text, reference))
            what = "a local file" if scheme == "file" else f"a {scheme}: location"
            raise OriginError(
                f"{_short(reference)} is {what}; a source read from the network may only "
                f"name network sources ({', '.join(NETWORK_SCHEMES)}); not read"
            )
        if scheme == "file":
            return Location.of(reference)
        if scheme is not None:
            raise ReadError(
                f"{_short(reference)}: unsupported scheme {scheme}: (expected a path, a file: "
                f"URL or {', '.join(s + ':' for s in NETWORK_SCHEMES)}); not read"
            )
        return Location(str(self.path.parent / reference))

    def __str__(self) -> str:
        return self.text


def _urljoin(base: str, reference: str) -> str:
    """`urljoin`, also for the schemes it does not know to be hierarchical (s3://)."""
    scheme, rest = base.split("://", 1)
    if scheme in ("http", "https"):
        return urljoin(base, reference)
    return scheme + "://" + urljoin("http://" + rest, reference).removeprefix("http://")


def without_query(url: str) -> str:
    """`url` without its query and fragment, if it is an http(s) URL; else as it is."""
    if scheme_of(url) not in ("http", "https"):
        return url
    return url.split("#", 1)[0].split("?", 1)[0]


def scheme_of(reference: str) -> str | None:
    """The URL scheme `reference` starts with, in lower case; None for a path."""
    match = _SCHEME.match(reference)
    return match.group(1).lower() if match else None


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


UrlMap = tuple[tuple[str, str], ...]
"""(prefix, replacement) pairs: where to read a listing's entries from instead (the
first prefix an entry's URL starts with is replaced)."""


class Opener:
    """Reads locations: local files directly, URLs through `reader`, within `limits`."""

    def __init__(
        self,
        reader: Reader | None = None,
        limits: SourceLimits | None = None,
        url_map: UrlMap = (),
    ) -> None:
        self.reader = reader
        self.limits = limits or SourceLimits()
        self.url_map = url_map
        """Where listings' entries are read from instead (`listings.read_listing`)."""

    @contextmanager
    def source(self) -> Iterator[None]:
        """Every read in the block shares one time budget, `limits.max_seconds`."""
        token = _SOURCE_DEADLINE.set(time.monotonic() + self.limits.max_seconds)
        try:
            yield
        finally:
            _SOURCE_DEADLINE.reset(token)

    def read_elsewhere(
        self, location: Location, sha256: str | None = None, failure: str | None = None
    ) -> None:
        """A blob read for this opener in another process (see tarball_sizes.py): its
        verified sha256, or why reading it failed. Only a recording opener keeps it."""

    def body_digest(self, text: str) -> str | None:
        """The sha256 of the body last read at the location `text`, where this opener
        keeps it (a recording opener: index/ingest/recording.py); None otherwise."""
        return None

    def stocked(self, folder: Location, stock: str | None) -> None:
        """The `FileStock` digest of the files of `folder` as the ingest read them (a v3
        mirror's spec manifests; None: one could not be looked at). Only a recording
        opener keeps it."""

    def read(self, location: Location) -> bytes:
        if location.is_url:
            return self._reader(location).read(location.text, _SOURCE_DEADLINE.get())
        return self._local(location, self._read_file)

    def read_verified(self, location: Location, sha256: str) -> Blob:
        """The bytes at `location`; ReadError unless their sha256 is `sha256`.

        A large local file named by its own digest (a build cache's or OCI layout's blob)
        is mapped (see `map_regular`), its pages dropped once hashed and read again as
        parsed: such a file is written once and never rewritten in place. Any other file
        (a v2 `index.json`, which `spack buildcache update-index` may copy over in place)
        is read whole, so that the bytes parsed are the bytes verified and a file cut
        short under the build cannot stop it with SIGBUS.
        """
        data, check = self.read_verifying(location, sha256)
        check.wait()
        return data

    def read_verifying(self, location: Location, sha256: str) -> tuple[Blob, PendingCheck]:
        """`read_verified`'s bytes, given before they are verified, and their check: nothing
        read from the bytes stands until `check.wait()` has returned (see `verifying`). A
        local file is hashed in a thread while the caller reads it; a URL's body is
        verified by the reader before it is given."""
        if location.is_url:
            body = self._reader(location).read_verified(
                location.text, sha256, _SOURCE_DEADLINE.get()
            )
            return body, PendingCheck(location, sha256, None)
        named_by_digest = location.path.name.lower() == sha256.lower()
        data = self._local(location, self._map_file if named_by_digest else self._read_file)
        return data, PendingCheck(location, sha256, PendingSha256(data))

    @contextmanager
    def verifying(self, location: Location, sha256: str) -> Iterator[tuple[Blob, PendingCheck]]:
        """`read_verifying`'s bytes and check, for the block to read the bytes while they
        are verified: the block's outcome stands once they are, and a mismatch raises
        ReadError as the block ends, instead of any error of the block's own (bytes other
        than the checksum names explain it). A long read should `poll` the check now and
        then, and `wait` for it before reading the bytes again another way."""
        data, check = self.read_verifying(location, sha256)
        try:
            yield data, check
        except Exception:
            check.wait()
            raise
        check.wait()

    def _read_file(self, path: Path) -> bytes:
        """A local file read whole (a recording opener also notes what file it was)."""
        return read_regular(path)

    def _map_file(self, path: Path) -> Blob:
        """A local file mapped (`map_regular`; a recording opener also notes what file)."""
        return map_regular(path)

    def _local(self, location: Location, read: Callable[[Path], _T]) -> _T:
        """`read(path)` of a local location, its errors as the opener's."""
        try:
            return read(location.path)
        except FileNotFoundError:
            raise NotFoundError(f"{location}: no such file") from None
        except NotRegularFileError as exc:
            raise ReadError(f"{location}: {exc.strerror}; not read") from None
        except OSError as exc:
            raise ReadError(f"{location}: cannot read ({reason(exc)})") from None

    def exists(self, location: Location) -> bool:
        """Whether a local location exists (URLs are found out by reading them)."""
        return not location.is_url and location.path.exists()

    def _reader(self, location: Location) -> Reader:
        if self.reader is None:
            raise ReadError(f"{location}: URLs can only be read by `cachegql index`")
        return self.reader


def check_sha256(location: Location, expected: str, actual: str) -> None:
    """ReadError unless the bytes read at `location`, of sha256 `actual`, are `expected`."""
    if actual != expected.lower():
        raise ReadError(
            f"{location}: checksum mismatch: expected sha256 {expected}, the file has {actual}"
        )


@dataclass(frozen=True)
class PendingCheck:
    """Whether bytes given by `Opener.read_verifying` have the sha256 they should, their
    hash found in a thread (`hashing`; None: verified before they were given)."""

    location: Location
    sha256: str
    hashing: PendingSha256 | None

    def wait(self) -> None:
        """Return once the bytes are verified; ReadError if they are not what was named."""
        if self.hashing is None:
            return
        check_sha256(self.location, self.sha256, self.hashing.result())

    def poll(self) -> None:
        """`wait`, if the hash is found already: a read of bytes that are not the ones
        named stops as soon as that is known (a parse of 1.8 GB takes a minute)."""
        if self.hashing is not None and self.hashing.done:
            self.wait()
