"""Counts of answered requests gathered in plain dicts, added to the Prometheus metrics in
batches.

With several workers, prometheus_client keeps each value in a memory-mapped file, and each
increment takes a lock and writes to the file. The four values a cached answer touches
(its request counter, its histogram's sum and bucket, the response cache's counter) cost
16 µs of its 88 µs of CPU. Here a request adds to dicts, and what was gathered is added to the
metrics at most `FLUSH_SECONDS` later by a timer on the event loop, and by every scrape
before it is answered: a scrape counts its own worker's requests up to itself, and the
other workers' up to a second before. What was not yet added when a worker is killed is
lost; a worker shutting down adds it first.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections.abc import Sequence

from prometheus_client import Counter, Histogram

__all__ = ["FLUSH_SECONDS", "Tally"]

FLUSH_SECONDS = 1.0


class Tally:
    """Increments of counters and observations of histograms (children with their labels
    set), held until `flush`. Used from one event loop's thread, as requests are answered;
    without a running loop each is added at once."""

    def __init__(self, buckets: Sequence[float]) -> None:
        self.bounds = (*buckets, float("inf"))
        self.counts: dict[tuple[Counter, ...], int] = {}
        """Per group of counters counted together (`count_each`): how many times."""
        self.timings: dict[Histogram, list[float]] = {}
        """Per histogram: the sum of its observations, then how many fell in each bucket."""
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def count(self, counter: Counter) -> None:
        self.count_each((counter,))

    def count_each(self, counters: tuple[Counter, ...]) -> None:
        """Count one for each of `counters` (a counter twice in it: two)."""
        self.counts[counters] = self.counts.get(counters, 0) + 1

    def observe(self, histogram: Histogram, seconds: float) -> None:
        timing = self.timings.get(histogram)
        if timing is None:
            timing = self.timings[histogram] = [0.0] * (len(self.bounds) + 1)
        timing[0] += seconds
        # The first bucket whose bound is at least `seconds`, as `Histogram.observe` finds.
        timing[1 + bisect_left(self.bounds, seconds)] += 1

    def flush_later(self) -> None:
        """Have what was gathered added within `FLUSH_SECONDS` (at once without a loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if self._loop is not loop:  # a timer of another loop (tests) may never fire
            self._loop, self._timer = loop, None
        if self._timer is None:
            self._timer = loop.call_later(FLUSH_SECONDS, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        if loop is self._loop:
            self._timer = None
            self.flush()

    def flush(self) -> None:
        """Add everything gathered to the metrics."""
        counts, self.counts = self.counts, {}
        for counters, count in counts.items():
            for counter in counters:
                counter.inc(count)
        timings, self.timings = self.timings, {}
        for histogram, (total, *per_bucket) in timings.items():
            _observe_many(histogram, total, per_bucket)


def _observe_many(histogram: Histogram, total: float, per_bucket: list[float]) -> None:
    """What `histogram.observe` does for each of many observations, a write per value
    rather than two per observation (prometheus_client has no batch form)."""
    histogram._sum.inc(total)
    for bucket, count in zip(histogram._buckets, per_bucket, strict=True):
        if count:
            bucket.inc(count)
