"""Where each GraphQL operation runs: on the event loop when cheap, else in a worker thread.

The index and whoosh calls block, so anything that can take long runs in a thread and
the event loop stays free for other requests. Cheap operations (no connection, no
search: `spec`, `package` summaries, `stacks`, `tags`) read precomputed data, and
running them on the loop costs less than handing them to a thread.

One thread at a time: the work is CPU-bound Python, so more threads only fight over
the GIL (measured at 1M specs: 280 filtered pages/s with up to 40 threads, 435 with
one). More cores are used with more worker processes.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import anyio
import anyio.to_thread
from graphql import FieldNode, GraphQLError, Visitor, parse, visit
from strawberry.types import ExecutionResult

from cachegql.schema import CONNECTION_FIELDS, Operation

__all__ = ["Offloader", "runs_inline"]

DOCUMENT_CACHE_SIZE = 256


@lru_cache(maxsize=DOCUMENT_CACHE_SIZE)
def runs_inline(query: str | None) -> bool:
    """Whether a query only reads precomputed data (no connection, no search)."""
    if not query:
        return False
    try:
        document = parse(query)
    except GraphQLError:
        return False
    expensive = False

    class Finder(Visitor):
        def enter_field(self, node: FieldNode, *_: Any) -> None:
            nonlocal expensive
            if node.name.value in CONNECTION_FIELDS:
                expensive = True

    visit(document, Finder())
    return not expensive


class Offloader:
    """The server's runner: cheap operations inline, the rest in one worker thread."""

    def __init__(self) -> None:
        self._limiter: anyio.CapacityLimiter | None = None

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The worker thread's capacity; made on first use, inside the event loop."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(1)
        return self._limiter

    async def __call__(self, query: str | None, operation: Operation) -> ExecutionResult:
        if runs_inline(query):
            return operation()
        return await anyio.to_thread.run_sync(operation, limiter=self.limiter)
