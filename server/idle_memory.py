"""A worker's freed memory given back to the system once the worker is idle.

Queries allocate large temporaries (a mask over a tag's rows, the rows of an answer),
and glibc keeps what they free for the next query: its mmap threshold rose to the
largest block freed while the index loaded (`cachegql.index.release_freed`), so blocks
of up to 32 MB come from the heap and stay there. At 1M build-cache specs, after the
benchmark's six dependency queries, that is some 20 MB of a worker's resident memory,
kept while it serves nothing.

So once a worker has had requests and then a whole `IDLE_SECONDS` without any (none
arrived, none in progress, no query still running in a worker thread, as an abandoned one
may), it gives that memory back once (glibc's `malloc_trim`, in a thread of its own), as
jemalloc and tcmalloc return theirs after a delay. A busy worker never does, so its
queries keep reusing that memory: trimming after every query, or fixed glibc thresholds,
made `^zlib` at 1M take 5.1 ms instead of 3.0 (its temporaries faulted in again each
time); after an idle spell, the first heavy queries pay some of that again. The trim
holds the C heap's locks for a few milliseconds, during which a request arriving waits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import anyio
import anyio.to_thread

from cachegql.index import release_freed

__all__ = ["IDLE_SECONDS", "IdleWatch", "release_when_idle"]

IDLE_SECONDS = 1.0

logger = logging.getLogger("cachegql.server")


class IdleWatch:
    """Looked at every `IDLE_SECONDS`: says when a worker that had requests has been idle
    for a whole look since, once per idle spell."""

    def __init__(self) -> None:
        self._looked_at: int | None = None  # requests arrived at the last look; None: busy
        self._released_at = 0

    def release_now(self, arrived: int, busy: bool) -> bool:
        """Whether to give memory back now, given the requests `arrived` so far and
        whether one is in progress (or a query still runs)."""
        idle = not busy and arrived == self._looked_at
        self._looked_at = None if busy else arrived
        if idle and arrived != self._released_at:
            self._released_at = arrived
            return True
        return False


async def release_when_idle(
    arrived: Callable[[], int],
    busy: Callable[[], bool],
    idle_seconds: float = IDLE_SECONDS,
    release: Callable[[], None] = release_freed,
) -> None:
    """Give freed memory back (`release`) each time the worker falls idle after serving:
    one to two `idle_seconds` after the end of its last request. Runs until cancelled."""
    watch = IdleWatch()
    while True:
        await anyio.sleep(idle_seconds)
        if watch.release_now(arrived(), busy()):
            started = time.perf_counter()
            await anyio.to_thread.run_sync(release)
            logger.debug(
                "idle: freed memory given back in %.1f ms", 1e3 * (time.perf_counter() - started)
            )
