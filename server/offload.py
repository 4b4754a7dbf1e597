"""Where each GraphQL operation runs, and for how long it may.

The index and whoosh calls block, so anything that can take long runs in a worker thread
and the event loop stays free for other requests. Cheap operations (a short document with
no connection and no search: `spec`, `package` summaries, `stacks`, `tags`) read
precomputed data, and running them on the loop costs less than handing them to a thread;
a long document is never parsed on the loop.

A few threads (`threads`, 2 by default): the work is CPU-bound Python, so more threads
only fight over the GIL (measured at 1M specs: 280 filtered pages/s with up to 40
threads, 435 with one), but with one, a single expensive query would make every other
one wait for it; with two, a cheap query shares the CPU with it instead. More cores are
used with more worker processes.

Each operation has a time budget: the index checks it in its long loops
(`cachegql.index.deadline`) and stops the query with a coded error; should it not
(work outside the index), the runner raises `OverBudgetError` when two budgets and a
grace period are spent (the schema answers it with a coded error) and leaves the thread
to finish alone. Two: a compiled plan that fails for a reason other than time hands the
stock path a whole budget of its own (`cachegql.schema.direct`), as it would have had
without the plan.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from graphql import FieldNode, GraphQLError, Visitor, parse, visit

from cachegql.index import OverBudgetError, run_with_deadline
from cachegql.schema import CONNECTION_FIELDS

__all__ = [
    "BUDGETS",
    "DEFAULT_THREADS",
    "DEFAULT_TIME_BUDGET",
    "GRACE_SECONDS",
    "Offloader",
    "runs_inline",
]

DOCUMENT_CACHE_SIZE = 256
INLINE_MAX_CHARS = 2_000
DEFAULT_THREADS = 2
DEFAULT_TIME_BUDGET = 10.0
GRACE_SECONDS = 1.0
BUDGETS = 2
T = TypeVar("T")


@lru_cache(maxsize=DOCUMENT_CACHE_SIZE)
def runs_inline(query: str | None) -> bool:
    """Whether a query is short and only reads precomputed data (no connection, no
    search): parsing it on the loop takes well under a millisecond."""
    if not query or len(query) > INLINE_MAX_CHARS:
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
    """The server's runner: cheap operations inline (those the schema says are, by their
    price and the rows they read, and short documents without connections), the rest in
    worker threads, each within `time_budget` seconds."""

    def __init__(
        self, threads: int = DEFAULT_THREADS, time_budget: float = DEFAULT_TIME_BUDGET
    ) -> None:
        self.threads = threads
        self.time_budget = time_budget
        self._limiter: anyio.CapacityLimiter | None = None

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The worker threads' capacity; made on first use, inside the event loop."""
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.threads)
        return self._limiter

    async def __call__(
        self, query: str | None, operation: Callable[[], T], inline: bool = False
    ) -> T:
        if inline or runs_inline(query):
            return run_with_deadline(self.time_budget, operation)
        with anyio.move_on_after(BUDGETS * self.time_budget + GRACE_SECONDS):
            return await anyio.to_thread.run_sync(
                run_with_deadline,
                self.time_budget,
                operation,
                limiter=self.limiter,
                abandon_on_cancel=True,
            )
        raise OverBudgetError(self.time_budget)
