"""A v3 mirror's views shared out between the spec-manifest reader and the build.

The reader's process reads the spec manifests, then the views' blobs
(tarball_sizes.py); the build parses the index meanwhile. Whichever is free first
takes the next view: the reader from the first, the build from the last, until they
meet, so each view is read once and neither waits while views are left. At 1M specs
the reader's share outlasted the parse by 5 to 11 s, with the build's core idle.
"""

from __future__ import annotations

from multiprocessing.context import SpawnContext

__all__ = ["ViewClaims"]


class ViewClaims:
    """The views not yet taken, `[first, end)`, in memory both processes share (given to
    the reading process as it is started)."""

    def __init__(self, context: SpawnContext, count: int) -> None:
        self._bounds = context.Array("i", [0, count])

    def first(self) -> int | None:
        """The lowest view not taken, now taken (None: none left)."""
        with self._bounds.get_lock():
            first, end = int(self._bounds[0]), int(self._bounds[1])
            if first >= end:
                return None
            self._bounds[0] = first + 1
            return first

    def last(self) -> int | None:
        """The highest view not taken, now taken (None: none left)."""
        with self._bounds.get_lock():
            first, end = int(self._bounds[0]), int(self._bounds[1])
            if first >= end:
                return None
            self._bounds[1] = end - 1
            return end - 1
