"""The one `Reader` `cachegql index` gives the index: each network scheme to its reader.

http(s) through server/fetch.py, `oci://` through server/oci.py, `s3://` through
server/s3.py; each is made when a URL of its kind is first read (an index of http(s)
sources never builds an S3 client, nor needs credentials).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from cachegql.index import ReadError, SourceLimits

if TYPE_CHECKING:
    from cachegql.server.bounded import Progress

__all__ = ["RemoteOptions", "RemoteReader"]


class _Closable(Protocol):
    def read(self, url: str, deadline: float | None = None) -> bytes: ...
    def read_verified(self, url: str, sha256: str, deadline: float | None = None) -> bytes: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class RemoteOptions:
    """What the command line says about reading network sources."""

    cache: Path | None = None
    timeout: float = 30.0
    retries: int = 3
    oci_username_variable: str | None = None
    oci_password_variable: str | None = None
    s3_endpoint_url: str | None = None
    progress: Callable[[str], Progress] | None = None
    limits: SourceLimits | None = None
    on_redirect: Callable[[str], None] | None = None


class RemoteReader:
    """Reads every network scheme, each through its own reader."""

    def __init__(self, options: RemoteOptions) -> None:
        self.options = options
        self.readers: dict[str, _Closable] = {}

    def read(self, url: str, deadline: float | None = None) -> bytes:
        return self._reader(url).read(url, deadline)

    def read_verified(self, url: str, sha256: str, deadline: float | None = None) -> bytes:
        return self._reader(url).read_verified(url, sha256, deadline)

    @property
    def downloaded(self) -> int:
        """Bytes received from every source, for the summary and for tests."""
        return sum(int(getattr(reader, "downloaded", 0)) for reader in self.readers.values())

    def close(self) -> None:
        for reader in self.readers.values():
            reader.close()

    def __enter__(self) -> RemoteReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _reader(self, url: str) -> _Closable:
        kind = url.split("://", 1)[0]
        kind = {"https": "http", "oci+http": "oci"}.get(kind, kind)
        if kind not in self.readers:
            self.readers[kind] = self._make(kind, url)
        return self.readers[kind]

    def _make(self, kind: str, url: str) -> _Closable:
        # Each reader's module is imported when a URL of its kind is first read: httpx
        # alone took 80 ms of every `cachegql index` of local sources.
        o = self.options
        if kind == "http":
            from cachegql.server.fetch import HttpReader

            return HttpReader(
                o.cache,
                timeout=o.timeout,
                retries=o.retries,
                limits=o.limits,
                progress=o.progress,
                on_redirect=o.on_redirect,
            )
        if kind == "oci":
            from cachegql.server.oci import OciReader

            return OciReader(
                o.cache,
                timeout=o.timeout,
                retries=o.retries,
                username_variable=o.oci_username_variable,
                password_variable=o.oci_password_variable,
                progress=o.progress,
                limits=o.limits,
                on_redirect=o.on_redirect,
            )
        if kind == "s3":
            from cachegql.server.s3 import S3Reader

            return S3Reader(
                o.cache,
                timeout=o.timeout,
                retries=o.retries,
                endpoint_url=o.s3_endpoint_url,
                limits=o.limits,
            )
        raise ReadError(f"{url}: cannot read URLs of this kind")
