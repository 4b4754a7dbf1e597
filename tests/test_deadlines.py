"""One timer for the deadlines of many awaits (`server/deadlines.py`)."""

from __future__ import annotations

import asyncio
import time

import pytest

from cachegql.server.deadlines import TICKS, Deadlines


def test_an_await_past_its_deadline_raises_timeout_within_a_tick() -> None:
    deadlines = Deadlines(0.2)

    async def run() -> float:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await deadlines.run(lambda: asyncio.sleep(10))
        return time.monotonic() - started

    waited = asyncio.run(run())
    # Within a tick of the deadline, and far from the 10 s the await would take: the
    # margin is for a loop that a busy machine did not run for a while (a CI run beside
    # a browser took 0.49 s), not for the timer.
    assert 0.2 <= waited < 0.2 * (TICKS + 1) / TICKS + 1.0
    assert not deadlines.waiting and not deadlines.expired


def test_awaits_in_time_are_answered_and_others_are_left_alone() -> None:
    deadlines = Deadlines(0.3)

    async def slow(seconds: float) -> float:
        await asyncio.sleep(seconds)
        return seconds

    async def run() -> list[float | BaseException]:
        answers = await asyncio.gather(
            deadlines.run(lambda: slow(0.01)),
            deadlines.run(lambda: slow(5)),
            deadlines.run(lambda: slow(0.05)),
            return_exceptions=True,
        )
        return list(answers)

    first, late, third = asyncio.run(run())
    assert first == 0.01 and third == 0.05 and isinstance(late, TimeoutError)
    # a cancellation from elsewhere is not taken for a timeout

    async def cancelled() -> None:
        task = asyncio.create_task(deadlines.run(lambda: slow(5)))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())


def test_one_limit_serves_one_loop_after_another() -> None:
    deadlines = Deadlines(0.1)
    for _ in range(3):  # the timer of a finished loop does not stand for the next one's

        async def run() -> None:
            with pytest.raises(TimeoutError):
                await deadlines.run(lambda: asyncio.sleep(5))

        asyncio.run(run())


def test_a_wait_left_by_a_closed_loop_does_not_stop_the_next_loops_limit() -> None:
    """A loop closed while a task waited leaves its entry behind (its `finally` never
    ran): the next loop's deadlines are still kept, and the stale entry is dropped."""
    deadlines = Deadlines(0.1)
    old = asyncio.new_event_loop()
    stranded = old.create_task(deadlines.run(lambda: asyncio.sleep(10)))
    old.run_until_complete(asyncio.sleep(0.01))  # it waits now
    old.close()  # ...and never finishes
    assert stranded in deadlines.waiting

    async def run() -> None:
        with pytest.raises(TimeoutError):
            await deadlines.run(lambda: asyncio.sleep(10))

    asyncio.run(run())
    assert not deadlines.waiting
