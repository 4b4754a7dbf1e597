"""Decompressing gzip'd blobs within the source limits, a piece at a time.

A v3 mirror's index blob is gzip'd, and its checksum proves only that it is the blob the
mirror's manifest names: a hostile mirror names a bomb as easily as an index. Inflated
in pieces, such a blob is refused at the limit instead of filling memory first.
"""

from __future__ import annotations

import zlib

from cachegql.index.ingest.limits import SourceLimits, over_limit
from cachegql.index.ingest.spackdb import SourceFormatError

__all__ = ["gunzip"]

_PIECE = 1 << 20
_GZIP = 16 + zlib.MAX_WBITS


def gunzip(data: bytes, source: str, limits: SourceLimits) -> bytes:
    """The content of the gzip data `data` (of one member or several)."""
    pieces: list[bytes] = []
    inflated = 0
    pending = data
    try:
        while pending:
            inflater = zlib.decompressobj(_GZIP)
            while not inflater.eof:
                piece = inflater.decompress(pending, _PIECE)
                pending = inflater.unconsumed_tail
                if not piece and not pending:  # all input taken and nothing more came out
                    break
                inflated += len(piece)
                pieces.append(piece)
                if (why := over_limit(inflated, len(data) - len(pending), limits)) is not None:
                    raise SourceFormatError(f"{source}: gzip content {why}; not read")
            if not inflater.eof:
                raise SourceFormatError(f"{source}: gzip content ends before its end marker")
            pending = inflater.unused_data
    except zlib.error as exc:
        raise SourceFormatError(f"{source}: not valid gzip content ({exc})") from None
    return b"".join(pieces)
