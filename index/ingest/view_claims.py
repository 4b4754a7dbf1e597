"""A v3 mirror's views shared out between the spec-manifest reader and the build.

The reader's process reads the spec manifests, then the views' blobs
(tarball_sizes.py); the build parses the index meanwhile. Whichever is free first
takes the next view: the reader from the first, the build from the last, until they
meet, so each view is read once and neither waits while views are left. At 1M specs
the build waited 12.5 s for the reader after its parse, its own core idle.
"""

from __future__ import annotations

from collections.abc import Callable
from multiprocessing.context import SpawnContext

__all__ = ["ViewClaims"]

# How long a claim waits on the lock before it asks whether the other process still
# lives: one killed while it held the lock (a few bytecodes) never gives it back.
_LOCK_SECONDS = 1.0


class ViewClaims:
    """The views not yet taken, `[first, end)`, in memory both processes share (given to
    the reading process as it is started). A claim gives up (None) once `other_alive`
    says the other process is gone while it waits on the lock."""

    def __init__(self, context: SpawnContext, count: int) -> None:
        self._bounds = context.Array("i", [0, count])

    def first(self, other_alive: Callable[[], bool]) -> int | None:
        """The lowest view not taken, now taken (None: none left)."""
        return self._take(True, other_alive)

    def last(self, other_alive: Callable[[], bool]) -> int | None:
        """The highest view not taken, now taken (None: none left)."""
        return self._take(False, other_alive)

    def _take(self, from_first: bool, other_alive: Callable[[], bool]) -> int | None:
        lock = self._bounds.get_lock()
        while not lock.acquire(timeout=_LOCK_SECONDS):
            if not other_alive():
                return None
        try:
            first, stop = int(self._bounds[0]), int(self._bounds[1])
            if first >= stop:
                return None
            if from_first:
                self._bounds[0] = first + 1
                return first
            self._bounds[1] = stop - 1
            return stop - 1
        finally:
            lock.release()
