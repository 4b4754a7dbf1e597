"""Reading a remote body within the source limits, for every kind of remote reader.

http(s) (server/fetch.py), OCI registries (server/oci.py) and S3 buckets (server/s3.py)
read bodies from somebody else's server: each read here is refused, with one message that
names the URL and the limit's flag, when it announces or grows past `max_bytes`, inflates
past `max_expansion` (bodies sent gzip'd are inflated a MiB at a time), or outlasts the
source's deadline; and a redirect is refused when it leaves http(s) or goes from https to
plain http. The limits are declared in index/ingest/limits.py.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterator
from typing import Protocol

import httpx

from cachegql.index import GZIP_OR_ZLIB, LIMITS, Inflater, ReadError, SourceLimits, over_limit

__all__ = [
    "FLAGS",
    "Progress",
    "deadline_for",
    "out_of_time",
    "read_body",
    "read_stream",
    "refused_redirect",
    "short",
    "time_left",
]

FLAGS = {limit.field: limit.flag for limit in LIMITS}
CHUNK = 1 << 16
Progress = Callable[[int, int], None]


class Stream(Protocol):
    """A body read a chunk at a time (botocore's StreamingBody)."""

    def read(self, amt: int | None = None) -> bytes: ...


def deadline_for(deadline: float | None, limits: SourceLimits) -> float:
    """The source's deadline, or one of `max_seconds` from now for a read on its own."""
    return deadline if deadline is not None else time.monotonic() + limits.max_seconds


def out_of_time(url: str, limits: SourceLimits) -> ReadError:
    return ReadError(
        f"{url}: its source not read within {limits.max_seconds:g} s "
        f"({FLAGS['max_seconds']}); given up"
    )


def time_left(url: str, deadline: float, limits: SourceLimits) -> float:
    """The seconds left before `deadline`; ReadError when none are."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise out_of_time(url, limits)
    return left


def _announced(url: str, size: int, limits: SourceLimits) -> None:
    if size > limits.max_bytes:
        raise ReadError(
            f"{url}: announces a body of {size:,} bytes, larger than "
            f"{limits.max_bytes:,} bytes ({FLAGS['max_bytes']}); not read"
        )


def read_body(
    url: str,
    response: httpx.Response,
    limits: SourceLimits,
    deadline: float,
    show: Progress | None = None,
) -> bytes:
    """The body of `response`, decoded, within the limits; as it arrives (a trickle
    meets the deadline between two reads)."""
    declared = response.headers.get("content-length", "")
    total = int(declared) if declared.isdigit() else 0
    _announced(url, total, limits)
    inflater = _inflater(url, response)
    chunks, received = [], 0
    for raw in response.iter_raw():
        for piece in _decoded(url, inflater, raw):
            chunks.append(piece)
            received += len(piece)
            taken = inflater.taken if inflater is not None else None
            if (why := over_limit(received, taken, limits)) is not None:
                raise ReadError(f"{url}: the body {why}; not read")
        time_left(url, deadline, limits)
        if show is not None:
            show(received, max(total, received))
    if show is not None:
        show(received, received)
    return b"".join(chunks)


def read_stream(
    url: str, stream: Stream, length: int | None, limits: SourceLimits, deadline: float
) -> bytes:
    """A body read a chunk at a time (S3's), within the size limit and the deadline."""
    if length is not None:
        _announced(url, length, limits)
    chunks, received = [], 0
    while chunk := stream.read(CHUNK):
        chunks.append(chunk)
        received += len(chunk)
        if (why := over_limit(received, None, limits)) is not None:
            raise ReadError(f"{url}: the body {why}; not read")
        time_left(url, deadline, limits)
    return b"".join(chunks)


def _inflater(url: str, response: httpx.Response) -> Inflater | None:
    """What decodes the body as it is sent, None when it is sent as it is."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        return Inflater(GZIP_OR_ZLIB)
    raise ReadError(f"{url}: the body is sent as {encoding!r}, which cachegql did not ask for")


def _decoded(url: str, inflater: Inflater | None, raw: bytes) -> Iterator[bytes]:
    """The pieces `raw` decodes to, one at a time (each is checked before the next)."""
    if inflater is None:
        yield raw
        return
    try:
        yield from inflater.feed(raw)
    except zlib.error as exc:
        raise ReadError(f"{url}: the body is not valid compressed data ({exc})") from None


def refused_redirect(origin: str, target: str) -> str | None:
    """Why a redirect from `origin` to `target` is not followed; None if it is."""
    scheme = target.split(":", 1)[0].lower() if ":" in target else ""
    if scheme not in ("http", "https"):
        return "not a network location (only http and https are followed); not followed"
    if scheme == "http" and origin.lower().startswith("https:"):
        return "from https to plain http (a downgrade); not followed"
    return None


def short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."
