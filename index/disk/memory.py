"""Giving back to the system the memory that loading an index freed."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

__all__ = ["release_freed", "releases_freed"]


def release_freed() -> None:
    """Return the free pages of the C heap to the system, where the C library can (glibc's
    `malloc_trim`; elsewhere nothing is done).

    Loading reads each array whole, then keeps a narrower copy of many (`columns.narrow`):
    glibc keeps the freed blocks for later, as its mmap threshold rises to the largest
    block freed, and at 1M build-cache specs that held 25 MB of a worker's memory for good.
    Called once per load, not per query: a query's temporaries are reused, not refaulted.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def releases_freed() -> bool:
    """Whether `release_freed` does anything here (glibc)."""
    return _malloc_trim() is not None


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        function: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc: musl, macOS
        return None
    return function
