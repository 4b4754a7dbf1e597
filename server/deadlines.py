"""A time limit on many awaits at once, with one timer for all of them.

Each request's body must arrive within a time limit (`body`). asyncio's `timeout` sets a
timer for each and cancels it after: 6 µs of CPU a request on uvloop, a quarter of a
response cache hit's. Here a request only notes its deadline in a dict; one timer, armed
while any request waits, looks every `seconds / 8` for deadlines passed and cancels
their tasks, which raise `TimeoutError`. So a limit of `seconds` is met within
`seconds * 9 / 8`; the race asyncio's `timeout` has (a task cancelled just as its await
completed) is the same here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["Deadlines"]

TICKS = 8
MIN_TICK = 0.001  # a limit of 0 (or less) is met at the next look, not in a busy loop
T = TypeVar("T")


class Deadlines:
    """Deadlines of `seconds` for awaits in tasks of one event loop."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.tick = max(seconds / TICKS, MIN_TICK)
        self.waiting: dict[asyncio.Task[object], float] = {}
        self.expired: set[asyncio.Task[object]] = set()
        self.timer: asyncio.TimerHandle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        """The loop of `timer` (an app may be served by one loop after another: tests)."""

    async def run(self, step: Callable[[], Awaitable[T]]) -> T:
        """`await step()`, raising TimeoutError if it takes more than the limit."""
        task = asyncio.current_task()
        assert task is not None
        loop = task.get_loop()
        self.waiting[task] = loop.time() + self.seconds
        if self.timer is None or self.loop is not loop:
            self.loop = loop
            self.timer = loop.call_later(self.tick, self._check, loop)
        try:
            return await step()
        except asyncio.CancelledError:
            if task in self.expired and task.uncancel() == 0:
                raise TimeoutError from None
            raise
        finally:
            self.waiting.pop(task, None)
            self.expired.discard(task)

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cancel the tasks past their deadline; look again a tick later while any wait."""
        if loop is not self.loop:
            return  # a timer of a loop no longer used
        self.timer = None
        now = loop.time()
        for task, deadline in list(self.waiting.items()):
            if task.get_loop() is not loop:
                # Left by a loop closed while it waited (its `finally` never ran): cancelling
                # it would raise, and keeping it would keep this timer going for nothing.
                del self.waiting[task]
            elif deadline <= now and task not in self.expired:
                self.expired.add(task)
                task.cancel()
        if self.waiting:
            self.timer = loop.call_later(self.tick, self._check, loop)
