"""The download cache's files (`~/.cache/cachegql/fetch`), shared by the remote readers.

Bodies and their ETags or digests, and blobs by checksum, are written atomically, so that
an interrupted run never leaves a torn entry for the next one to trust.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from cachegql.index import ReadError, SourceLimits, over_limit

__all__ = ["read_cached", "read_text", "read_verified", "write_atomically"]


def read_text(path: Path) -> str | None:
    """The stripped text of `path`, or None when it is empty or cannot be read."""
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def read_cached(path: Path, url: str, limits: SourceLimits) -> bytes:
    """The cached copy of `url`, sized first as a download is: it was kept under the
    limits of its day, which may have been wider than this run's (its compression was
    checked then; what is kept is decoded)."""
    try:
        return _within(path, url, limits)
    except OSError as exc:
        raise ReadError(
            f"{url}: the download cache's copy cannot be read ({exc.strerror or exc})"
        ) from None


def _within(path: Path, url: str, limits: SourceLimits) -> bytes:
    """`path`'s bytes, sized as they are read (the file opened once); raises OSError."""
    with path.open("rb") as file:
        if (why := over_limit(os.fstat(file.fileno()).st_size, None, limits)) is not None:
            raise ReadError(f"{url}: the body {why}; not read")
        return file.read()


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_bytes(data)
    partial.replace(path)


def read_verified(
    cache: Path | None,
    url: str,
    sha256: str,
    fetch: Callable[[], bytes],
    limits: SourceLimits,
    what: str = "checksum",
) -> bytes:
    """The bytes of `url`, which must have this sha256: the cache's blob of that checksum
    when it has one intact (and within `limits`), else `fetch()`ed, checked, and kept in
    the cache."""
    expected = sha256.lower()
    blob = cache / "blobs" / expected if cache is not None and len(expected) == 64 else None
    if blob is not None:
        try:
            data = _within(blob, url, limits)
        except OSError:
            pass  # none cached (or unreadable): fetched
        else:
            if hashlib.sha256(data).hexdigest() == expected:
                return data
    data = fetch()
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise ReadError(f"{url}: {what} mismatch: expected sha256:{sha256}, got sha256:{actual}")
    if blob is not None:
        write_atomically(blob, data)
    return data
