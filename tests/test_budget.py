"""The time budget: `run_with_deadline` bounds its work as `with deadline(...)` does."""

from __future__ import annotations

import time

import pytest

from cachegql.index import OverBudgetError, deadline, run_with_deadline
from cachegql.index.budget import check, remaining


def test_the_work_runs_under_its_deadline_and_the_outer_one_comes_back() -> None:
    assert remaining() is None

    def work() -> float | None:
        return remaining()

    left = run_with_deadline(5.0, work)
    assert left is not None and 4.0 < left <= 5.0
    assert remaining() is None  # none set outside, as before
    with deadline(60.0):
        inner = run_with_deadline(5.0, work)
        assert inner is not None and inner <= 5.0
        outer = remaining()
        assert outer is not None and outer > 50.0  # the inner one reset on leaving


def test_a_passed_deadline_raises_and_is_reset_after_the_exception() -> None:
    def slow() -> None:
        time.sleep(0.02)
        check()

    with pytest.raises(OverBudgetError, match=r"time budget of 0\.01 s"):
        run_with_deadline(0.01, slow)
    assert remaining() is None
    check()  # no deadline left behind to fail the next work
