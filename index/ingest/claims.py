"""Work shared out between the build and a helper process, in memory both share.

Two helpers take work the build would otherwise do alone, on the other core, and
whichever is free first takes the next piece, so that each piece is done once and
neither waits while pieces are left:

- `ViewClaims`: a v3 mirror's views, between the spec-manifest reader and the build
  (tarball_sizes.py). The reader reads its manifests, then takes views from the first;
  the build parses the index meanwhile, then takes them from the last, until they meet.
  At 1M specs the build waited 12.5 s for the reader after its parse, its own core idle.
- `EachClaims`: the local mirrors a rebuild looks at for its fingerprints (look_ahead.py).
  Both take them in the order the build needs them, each the next one not taken.
"""

from __future__ import annotations

from collections.abc import Callable
from multiprocessing.context import BaseContext
from typing import Any

__all__ = ["EachClaims", "ViewClaims"]

# How long a claim waits on the lock before it asks whether the other process still
# lives: one killed while it held the lock (a few bytecodes) never gives it back.
_LOCK_SECONDS = 1.0


def _acquired(lock: Any, other_alive: Callable[[], bool]) -> bool:
    """Whether `lock` was acquired: False once the other process is gone while it waits."""
    while not lock.acquire(timeout=_LOCK_SECONDS):
        if not other_alive():
            return False
    return True


class ViewClaims:
    """The views not yet taken, `[first, end)`, in memory both processes share (given to
    the reading process as it is started). A claim gives up (None) once `other_alive`
    says the other process is gone while it waits on the lock."""

    def __init__(self, context: BaseContext, count: int) -> None:
        self._bounds = context.Array("i", [0, count])

    def first(self, other_alive: Callable[[], bool]) -> int | None:
        """The lowest view not taken, now taken (None: none left)."""
        return self._take(True, other_alive)

    def last(self, other_alive: Callable[[], bool]) -> int | None:
        """The highest view not taken, now taken (None: none left)."""
        return self._take(False, other_alive)

    def _take(self, from_first: bool, other_alive: Callable[[], bool]) -> int | None:
        lock = self._bounds.get_lock()
        if not _acquired(lock, other_alive):
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


class EachClaims:
    """Pieces `0..count-1`, each taken once, by whichever process asks first."""

    def __init__(self, context: BaseContext, count: int) -> None:
        self._flags = context.Array("b", count)

    def take(self, index: int, other_alive: Callable[[], bool]) -> bool | None:
        """Whether piece `index` is now this process's (False: the other took it first;
        None: the other process is gone while this one waited on the lock)."""
        lock = self._flags.get_lock()
        if not _acquired(lock, other_alive):
            return None
        try:
            if self._flags[index]:
                return False
            self._flags[index] = 1
            return True
        finally:
            lock.release()
