"""How a command stops: SIGINT and SIGTERM end the block as the stop they are, even when
a library caught the raised stop and failed in its own way (numpy's `tofile`, interrupted
while a build wrote a column, raised a TypeError: the build ended with a traceback)."""

from __future__ import annotations

import os
import signal

import pytest

from cachegql.server.interrupts import Terminated, stop_signals_raise


def _swallowed_by_a_library(signum: int) -> None:
    """A real signal to this process, raised in the block and turned into another error."""
    try:
        os.kill(os.getpid(), signum)
        signal.sigtimedwait([], 0)  # nothing to wait for: lets the handler run first
    except (KeyboardInterrupt, Terminated):
        raise TypeError("expected str, bytes or os.PathLike object, not BufferedWriter") from None


@pytest.mark.parametrize(
    ("signum", "stop"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)]
)
def test_a_stop_turned_into_another_error_still_ends_the_block_as_the_stop(
    signum: int, stop: type[BaseException]
) -> None:
    # As a command started from a terminal has them: the tests may run where SIGINT is
    # ignored (started in the background by a shell without job control), which
    # `stop_signals_raise` rightly leaves ignored (test_an_ignored_sigterm_stays_ignored).
    previous = {
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
        signal.SIGTERM: signal.signal(signal.SIGTERM, signal.SIG_DFL),
    }
    try:
        before = {s: signal.getsignal(s) for s in previous}
        with pytest.raises(stop) as raised, stop_signals_raise():
            _swallowed_by_a_library(signum)
        assert isinstance(raised.value.__cause__, TypeError)
        assert {s: signal.getsignal(s) for s in before} == before  # the handlers put back
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def test_an_error_without_a_stop_is_that_error() -> None:
    with pytest.raises(TypeError), stop_signals_raise():
        raise TypeError("a bug, not a stop")


def test_an_ignored_sigterm_stays_ignored() -> None:
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with stop_signals_raise():
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGTERM)  # as the parent asked: nothing happens
    finally:
        signal.signal(signal.SIGTERM, previous)
