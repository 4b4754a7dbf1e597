"""Where sources are read from: local paths, and URLs through a reader the caller supplies.

The index knows nothing of HTTP: `cachegql index` passes a `Reader` (the server's HTTP
client, with its timeouts, retries and cache) for the http(s) URLs among the sources.
Local files are read here, regular files only (a named pipe or a device is refused
rather than read forever). Either way, a failure is a `ReadError` that names the
location and says what went wrong.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urljoin, urlparse

from cachegql.index.ingest.files import NotRegularFileError, read_regular, reason

__all__ = [
    "NETWORK_SCHEMES",
    "OCI_SCHEMES",
    "Location",
    "NotFoundError",
    "Opener",
    "ReadError",
    "Reader",
]

# Every kind of location read through the caller's `Reader`, never from the local disk:
# http(s), OCI registries (`oci://` as Spack writes it, `oci+http://` for a registry
# without TLS) and S3 buckets. A source read from the network may only name these.
OCI_SCHEMES = ("oci://", "oci+http://")
NETWORK_SCHEMES = ("http://", "https://", *OCI_SCHEMES, "s3://")


class ReadError(Exception):
    """A location that could not be read; the message names it and says why."""


class NotFoundError(ReadError):
    """The location does not exist (a missing file, an HTTP 404)."""


class Reader(Protocol):
    """Reads network URLs (`NETWORK_SCHEMES`)."""

    def read(self, url: str) -> bytes:
        """The body at `url`; raise ReadError (NotFoundError for a 404)."""

    def read_verified(self, url: str, sha256: str) -> bytes:
        """The body at `url`, which must have this sha256 (a cached copy may be used)."""


@dataclass(frozen=True, slots=True)
class Location:
    """A file or folder to read: an http(s) URL or a local path."""

    text: str

    @classmethod
    def of(cls, source: str | Path) -> Location:
        text = str(source)
        if text.startswith("file://"):
            text = unquote(urlparse(text).path)
        return cls(text)

    @property
    def is_url(self) -> bool:
        return self.text.startswith(NETWORK_SCHEMES)

    @property
    def is_oci(self) -> bool:
        """An OCI registry's repository (or an image in it), read as Spack reads one."""
        return self.text.startswith(OCI_SCHEMES)

    @property
    def path(self) -> Path:
        return Path(self.text)

    @property
    def name(self) -> str:
        return self.text.rstrip("/").rsplit("/", 1)[-1]

    def join(self, *parts: str) -> Location:
        """A location below this one (this one taken as a folder)."""
        if self.is_url:
            return Location(self.text.rstrip("/") + "/" + "/".join(parts))
        return Location(str(self.path.joinpath(*parts)))

    def sibling(self, reference: str) -> Location:
        """`reference` (a URL, `file://` URL or relative path) read from this file's folder."""
        if reference.startswith((*NETWORK_SCHEMES, "file://")):
            return Location.of(reference)
        if self.is_url:
            return Location(_urljoin(self.text, reference))
        return Location(str(self.path.parent / reference))

    def __str__(self) -> str:
        return self.text


def _urljoin(base: str, reference: str) -> str:
    """`urljoin`, also for the schemes it does not know to be hierarchical (s3://)."""
    scheme, rest = base.split("://", 1)
    if scheme in ("http", "https"):
        return urljoin(base, reference)
    return scheme + "://" + urljoin("http://" + rest, reference).removeprefix("http://")


class Opener:
    """Reads locations: local files directly, URLs through `reader`."""

    def __init__(self, reader: Reader | None = None) -> None:
        self.reader = reader

    def read(self, location: Location) -> bytes:
        if location.is_url:
            return self._reader(location).read(location.text)
        try:
            return read_regular(location.path)
        except FileNotFoundError:
            raise NotFoundError(f"{location}: no such file") from None
        except NotRegularFileError as exc:
            raise ReadError(f"{location}: {exc.strerror}; not read") from None
        except OSError as exc:
            raise ReadError(f"{location}: cannot read ({reason(exc)})") from None

    def read_verified(self, location: Location, sha256: str) -> bytes:
        """The bytes at `location`; ReadError unless their sha256 is `sha256`."""
        if location.is_url:
            return self._reader(location).read_verified(location.text, sha256)
        data = self.read(location)
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256.lower():
            raise ReadError(
                f"{location}: checksum mismatch: expected sha256 {sha256}, the file has {actual}"
            )
        return data

    def exists(self, location: Location) -> bool:
        """Whether a local location exists (URLs are found out by reading them)."""
        return not location.is_url and location.path.exists()

    def _reader(self, location: Location) -> Reader:
        if self.reader is None:
            raise ReadError(f"{location}: URLs can only be read by `cachegql index`")
        return self.reader
