"""Decompressing within the source limits, a piece at a time.

A v3 mirror's index blob is gzip'd, and its checksum proves only that it is the blob the
mirror's manifest names: a hostile mirror names a bomb as easily as an index. An http
body may be sent gzip'd too. Inflated a MiB at a time, either is refused at the limit
instead of filling memory first (a 64 KiB network read of a bomb inflates to 64 MB).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from cachegql.index.ingest.files import Blob
from cachegql.index.ingest.limits import SourceLimits, over_limit
from cachegql.index.ingest.locations import Location, Opener, PendingCheck
from cachegql.index.ingest.spackdb import SourceFormatError

__all__ = [
    "GZIP",
    "GZIP_MAGIC",
    "GZIP_OR_ZLIB",
    "Inflater",
    "gunzip",
    "gzip_start",
    "inflated",
    "read_blob",
    "verifying_blob",
]

PIECE = 1 << 20
GZIP = 16 + zlib.MAX_WBITS
GZIP_OR_ZLIB = 32 + zlib.MAX_WBITS  # the header tells which
GZIP_MAGIC = b"\x1f\x8b"


class Inflater:
    """Inflates compressed data given in parts (gzip members one after another)."""

    def __init__(self, wbits: int = GZIP) -> None:
        self._wbits = wbits
        self._inflater = zlib.decompressobj(wbits)
        self.taken = 0  # compressed bytes inflated so far, for the expansion ratio

    @property
    def ended(self) -> bool:
        """Whether the data given so far ends where a compressed stream ends."""
        return self._inflater.eof

    def feed(self, data: bytes) -> Iterator[bytes]:
        """What `data` inflates to, at most a MiB a piece; zlib.error if it is not valid."""
        pending = data
        before = self.taken
        while True:
            piece = self._inflater.decompress(pending, PIECE)
            pending = self._inflater.unconsumed_tail
            self.taken = before + len(data) - len(pending)
            if piece:
                yield piece
            if self._inflater.eof:
                pending = self._inflater.unused_data + pending
                if not pending:
                    return
                self._inflater = zlib.decompressobj(self._wbits)  # the next gzip member
            elif not piece and not pending:  # all taken, nothing more comes out
                return


def gunzip(data: bytes, source: str, limits: SourceLimits) -> bytes:
    """The content of the gzip data `data` (of one member or several)."""
    inflater = Inflater(GZIP)
    pieces: list[bytes] = []
    inflated = 0
    try:
        for piece in inflater.feed(data):
            pieces.append(piece)
            inflated += len(piece)
            if (why := over_limit(inflated, inflater.taken, limits)) is not None:
                raise SourceFormatError(f"{source}: gzip content {why}; not read")
    except zlib.error as exc:
        raise SourceFormatError(f"{source}: not valid gzip content ({exc})") from None
    if not inflater.ended:
        raise SourceFormatError(f"{source}: gzip content ends before its end marker")
    return b"".join(pieces)


def gzip_start(data: bytes, size: int) -> bytes:
    """The first `size` bytes (or fewer) the start of gzip data inflates to, to tell what
    it holds without inflating it whole; SourceFormatError if it is not valid gzip."""
    start = b""
    try:
        for piece in Inflater(GZIP).feed(data):
            start += piece
            if len(start) >= size:
                break
    except zlib.error as exc:
        raise SourceFormatError(f"not valid gzip content ({exc})") from None
    return start[:size]


def read_blob(blob: Location, checksum: str, opener: Opener) -> Blob:
    """A blob's bytes, checksum verified, inflated when gzipped (a v3 mirror's index and
    views, an OCI registry's index layer)."""
    return inflated(opener.read_verified(blob, checksum), blob, opener)


@contextmanager
def verifying_blob(
    blob: Location, checksum: str, opener: Opener
) -> Iterator[tuple[Blob, PendingCheck]]:
    """`read_blob`'s bytes, inflated when gzipped, and their check, for the block to read
    them while their checksum is verified beside (`Opener.verifying`)."""
    with opener.verifying(blob, checksum) as (data, check):
        yield inflated(data, blob, opener), check


def inflated(data: Blob, blob: Location, opener: Opener) -> Blob:
    """`data`, inflated within the opener's limits when gzipped."""
    if data[:2] == GZIP_MAGIC:
        return gunzip(data if isinstance(data, bytes) else bytes(data), str(blob), opener.limits)
    return data
