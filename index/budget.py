"""A time budget for work in the index: the caller sets a deadline, long loops check it.

The index cannot be interrupted from outside (it runs in a worker thread), so a query
over its budget stops itself: every loop whose length follows the corpus rather than
the answer calls `check()` once per chunk of work. Costs a context-variable read and a
clock read; without a deadline set, nothing is ever stopped.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar, Token
from typing import TypeVar

__all__ = ["OverBudgetError", "check", "deadline", "remaining", "renewed", "run_with_deadline"]

T = TypeVar("T")

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("cachegql_deadline", default=None)


class OverBudgetError(Exception):
    """The work ran past the time budget it was given."""

    def __init__(self, budget: float) -> None:
        super().__init__(f"the query took longer than its time budget of {budget:g} s")
        self.budget = budget


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Work in this block (and in this context only) must end within `seconds`;
    None: no bound."""
    if seconds is None:
        yield
        return
    token = _start(seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def run_with_deadline(seconds: float, work: Callable[[], T]) -> T:
    """`work()` as `with deadline(seconds)` runs it, without a generator's context
    manager: every operation the server answers is run so, and that cost microseconds
    of a hash lookup's answer."""
    token = _start(seconds)
    try:
        return work()
    finally:
        _deadline.reset(token)


def _start(seconds: float) -> Token[tuple[float, float] | None]:
    return _deadline.set((time.monotonic() + seconds, seconds))


@contextlib.contextmanager
def renewed() -> Iterator[None]:
    """The current deadline started again: work in this block gets the whole budget
    again (none is set where none was)."""
    current = _deadline.get()
    with deadline(None if current is None else current[1]):
        yield


def check() -> None:
    """Raise `OverBudgetError` if the current deadline has passed."""
    current = _deadline.get()
    if current is not None and time.monotonic() > current[0]:
        raise OverBudgetError(current[1])


def remaining() -> float | None:
    """Seconds left before the current deadline (negative once passed); None: no bound."""
    current = _deadline.get()
    return None if current is None else current[0] - time.monotonic()
