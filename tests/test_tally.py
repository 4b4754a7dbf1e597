"""Request counts gathered in dicts reach the Prometheus metrics as if counted one by one:
within a second on a running server, at once for a scrape, and before a worker stops."""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from cachegql.server import metrics as metrics_module
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


PERSISTED = "query P { packages(first: 4) { totalCount } }"
SHA = hashlib.sha256(PERSISTED.encode()).hexdigest()
MIXED = [
    {"query": "query A { packages(first: 1) { totalCount } }"},
    {"query": "query B { packages(first: 2) { totalCount } }"},
    {"query": "query A { packages(first: 1) { totalCount } }"},  # a response cache hit
    {"query": "query A { nope }"},  # a validation error, with its code
    {"query": "{ packages(first: 1) { totalCount } }"},
    {"query": "query C { packages(first: -1) { totalCount } }"},  # an error while it runs
    {"query": "query A { packages(first: 1) { totalCount } }"},
    {"query": "query %s { packages(first: 3) { totalCount } }" % ("L" * 5000)},  # (other)
    {"query": PERSISTED, "extensions": {"persistedQuery": {"version": 1, "sha256Hash": SHA}}},
    {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": SHA}}},  # then a hit
]


def _counts_of_mixed(pages_index: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    app = create_app(Settings(index=pages_index, reload_interval=0))
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        for _ in range(3):
            for body in MIXED:
                client.post("/graphql", json=body)
            assert client.get("/healthz").status_code == 200
            assert client.get("/no-such-page").status_code == 404  # no route, no codes
            assert "errors" in client.get("/graphql?query=%7B").json()  # with a code
        text = client.get("/metrics").text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("cachegql_")
        and not s.name.endswith(("_created", "_sum", "_bucket"))
        and "age" not in s.name
        and "timestamp" not in s.name
    }


def test_requests_counted_by_their_kind_are_counted_as_one_by_one(
    pages_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The series of each kind of request are found once (`Metrics._counted`); with no
    kind kept, or more kinds than kept, the counts are the same."""
    kept = _counts_of_mixed(pages_index)
    monkeypatch.setattr(metrics_module, "MAX_KINDS", 2)
    some = _counts_of_mixed(pages_index)
    monkeypatch.setattr(metrics_module, "MAX_KINDS", 0)  # each request found its series
    none = _counts_of_mixed(pages_index)
    assert kept == some == none
    ok_a = ("path", "/graphql"), ("operation", "A"), ("status", "2xx"), ("outcome", "ok")
    assert kept["cachegql_requests_total", tuple(sorted(ok_a))] == 9  # 3 a round
    hits = kept["cachegql_response_cache_requests_total", (("result", "hit"),)]
    assert hits >= 6  # A's later ones, at least
    errors = [v for (name, _), v in kept.items() if name == "cachegql_graphql_errors_total"]
    assert sum(errors) >= 9  # three requests a round with one error each, at least
    # The first round's; the later rounds' are the response cache's hits.
    assert kept["cachegql_persisted_queries_total", (("result", "hit"),)] == 1
    long = tuple(sorted({**dict(ok_a), "operation": "(other)"}.items()))
    assert kept["cachegql_requests_total", long] == 3
    missing = ("path", "(other)"), ("operation", ""), ("status", "4xx"), ("outcome", "error")
    assert kept["cachegql_requests_total", tuple(sorted(missing))] == 3
