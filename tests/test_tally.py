"""Request counts gathered in dicts reach the Prometheus metrics as if counted one by one:
within a second on a running server, at once for a scrape, and before a worker stops."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from cachegql.server import tally as tally_module
from cachegql.server.app import Settings, create_app
from cachegql.server.metrics import BUCKETS
from cachegql.server.tally import FLUSH_SECONDS, Tally
from tests.conftest import LiveServer

QUERY = {"query": "{ packages(first: 1) { totalCount } }"}


def _pair() -> tuple[CollectorRegistry, Counter, Histogram]:
    registry = CollectorRegistry()
    counter = Counter("hits", "Hits", ["kind"], registry=registry)
    histogram = Histogram("took_seconds", "Took", ["kind"], buckets=BUCKETS, registry=registry)
    return registry, counter, histogram


def _exposed(registry: CollectorRegistry) -> list[object]:
    """The exposition without the `_created` times, which differ between two registries;
    sums as numbers (added in another order, they differ in their last bits)."""
    text = generate_latest(registry).decode()
    lines = [line for line in text.splitlines() if "_created" not in line]
    return [pytest.approx(float(line.split()[-1])) if "_sum{" in line else line for line in lines]


def test_a_flushed_tally_exposes_what_counting_one_by_one_does() -> None:
    direct, direct_counter, direct_histogram = _pair()
    batched, batched_counter, batched_histogram = _pair()
    tally = Tally(BUCKETS)
    chance = random.Random(7)
    # Every bound itself (a value equal to a bound is in that bucket), beyond the last,
    # zero, and values between.
    seconds = [*BUCKETS, 0.0, 11.0, 1e9] + [chance.uniform(0, 12) for _ in range(2000)]
    for value in seconds:
        kind = chance.choice("ab")
        direct_counter.labels(kind).inc()
        direct_histogram.labels(kind).observe(value)
        tally.count(batched_counter.labels(kind))
        tally.observe(batched_histogram.labels(kind), value)
        if chance.random() < 0.01:  # several flushes add up
            tally.flush()
    assert _exposed(batched) != _exposed(direct)  # pending: not yet added
    tally.flush()
    assert _exposed(batched) == _exposed(direct)
    tally.flush()  # nothing gathered: nothing added
    assert _exposed(batched) == _exposed(direct)


def test_without_a_running_loop_counts_are_added_at_once() -> None:
    registry, counter, _ = _pair()
    tally = Tally(BUCKETS)
    tally.count(counter.labels("a"))
    tally.flush_later()
    assert registry.get_sample_value("hits_total", {"kind": "a"}) == 1


def test_on_a_loop_counts_are_added_by_the_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tally_module, "FLUSH_SECONDS", 0.05)
    registry, counter, _ = _pair()
    tally = Tally(BUCKETS)

    async def requests() -> list[float | None]:
        seen = []
        for _ in range(3):
            tally.count(counter.labels("a"))
            tally.flush_later()
            seen.append(registry.get_sample_value("hits_total", {"kind": "a"}))
            await asyncio.sleep(0.2)
        return seen

    assert asyncio.run(requests()) == [0, 1, 2]
    # A second loop (a new test client) gets a timer of its own.
    assert asyncio.run(requests()) == [3, 4, 5]
    assert registry.get_sample_value("hits_total", {"kind": "a"}) == 6


def _requests_counted(registry: CollectorRegistry) -> float | None:
    labels = {"path": "/graphql", "operation": "", "status": "2xx", "outcome": "ok"}
    return registry.get_sample_value("cachegql_requests_total", labels)


def test_a_served_app_adds_its_counts_without_a_scrape(pages_index: Path) -> None:
    app = create_app(Settings(index=pages_index, reload_interval=0))
    registry = app.state.metrics.registry
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        assert client.post("/graphql", json=QUERY).status_code == 200
        deadline = time.monotonic() + FLUSH_SECONDS + 10  # a second, on a quiet machine
        while _requests_counted(registry) != 1:
            assert time.monotonic() < deadline, "the timer never added the request"
            time.sleep(0.05)


def test_a_scrape_and_a_stop_add_what_was_gathered(
    pages_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tally_module, "FLUSH_SECONDS", 600.0)  # the timer never fires here
    app = create_app(Settings(index=pages_index, reload_interval=0))
    registry = app.state.metrics.registry
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        for _ in range(3):
            assert client.post("/graphql", json=QUERY).status_code == 200
        assert _requests_counted(registry) == 0  # gathered, not yet added
        families = text_string_to_metric_families(client.get("/metrics").text)
        samples = [s for family in families for s in family.samples]
        scraped = [s.value for s in samples if s.name == "cachegql_requests_total"]
        assert scraped == [3]  # the scrape itself is counted once answered
        assert client.post("/graphql", json=QUERY).status_code == 200
    # The server stopped long before its timer: its lifespan's end added the last ones.
    assert _requests_counted(registry) == 4
