"""A worker's freed memory given back to the system once the worker is idle.

Queries allocate large temporaries (a mask over a tag's rows, the rows of an answer),
and glibc keeps what they free for the next query: its mmap threshold rose to the
largest block freed while the index loaded (`cachegql.index.release_freed`), so blocks
of up to 32 MB come from the heap and stay there. At 1M build-cache specs, after the
benchmark's six dependency queries, that is some 20 MB of a worker's resident memory,
kept while it serves nothing.

So once a worker has admitted requests and then been idle for a whole `IDLE_SECONDS`
(no GraphQL request admitted since the last look, none in progress), it gives that
memory back once (glibc's `malloc_trim`, in a worker thread), as jemalloc and tcmalloc
return theirs after a delay. A busy worker never does, so its queries keep reusing that
memory: trimming after every query, or fixed glibc thresholds, made `^zlib` at 1M take
5.1 ms instead of 3.0 (its temporaries faulted in again each time); after an idle spell,
the first heavy query pays that once.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.to_thread

from cachegql.index import release_freed
from cachegql.server.admission import Admission

__all__ = ["IDLE_SECONDS", "release_when_idle"]

IDLE_SECONDS = 1.0


async def release_when_idle(
    admission: Admission,
    idle_seconds: float = IDLE_SECONDS,
    release: Callable[[], None] = release_freed,
) -> None:
    """Give freed memory back (`release`) each time the worker falls idle after serving:
    between one and two `idle_seconds` after its last request. Runs until cancelled."""
    looked_at, released_at = admission.admitted, 0
    while True:
        await anyio.sleep(idle_seconds)
        admitted = admission.admitted
        idle = admitted == looked_at and admission.in_progress == 0
        looked_at = admitted
        if idle and admitted != released_at:
            released_at = admitted
            await anyio.to_thread.run_sync(release)
