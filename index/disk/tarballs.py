"""The tarball names of a tag's specs, left in their file and read when asked for.

They are the biggest column (92 MB at 1M specs) and the least read: an answer reads them
only when it asks for `tarball`, a page at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cachegql.index.disk.columns import FileArray, narrow_offsets
from cachegql.index.disk.tag_files import bounds

__all__ = ["TarballNames"]

# A page of 100 specs reads at most this much of the names at once (~60 B each).
_SPAN = 64 << 10


class TarballNames:
    """Row `i`'s tarball name is `tarball.blob[offsets[i]:offsets[i + 1]]` (empty: none)."""

    def __init__(self, folder: Path, num_rows: int) -> None:
        self.blob = FileArray.raw(folder / "tarball.blob")
        self.offsets = narrow_offsets(
            bounds(folder, "tarball.offsets", num_rows, len(self.blob), "the size of tarball.blob")
        )

    def name(self, row: int) -> str | None:
        """The tarball name of `row`: one `fstat` and one `pread`."""
        start, end = self.offsets.item(row), self.offsets.item(row + 1)
        return self.blob.read(start, end).tobytes().decode() if end > start else None

    def names(self, rows: Sequence[int]) -> list[str | None]:
        """The tarball name of each row: one read of the span the rows cover when it is
        short (a page of one package's specs is adjacent rows), else one read per row."""
        if len(rows) <= 1:
            return [self.name(int(row)) for row in rows]
        wanted = np.asarray(rows, dtype=np.int64)
        starts, ends = self.offsets[wanted].tolist(), self.offsets[wanted + 1].tolist()
        low, high = min(starts), max(ends)
        if high - low <= _SPAN:
            span = self.blob.read(low, high).tobytes()
            return [
                span[s - low : e - low].decode() if e > s else None
                for s, e in zip(starts, ends, strict=True)
            ]
        return [
            self.blob.read(s, e).tobytes().decode() if e > s else None
            for s, e in zip(starts, ends, strict=True)
        ]
