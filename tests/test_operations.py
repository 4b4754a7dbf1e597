"""Operations: Prometheus metrics at /metrics, request ids and access log lines, over HTTP."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import socket
import struct
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from cachegql.index import build_index
from cachegql.index.disk.publish import builds_folder
from cachegql.schema import EXECUTIONS
from cachegql.server.access_log import AccessLog, configure_logger
from cachegql.server.app import Settings, create_app
from cachegql.server.holder import IndexHolder
from cachegql.server.metrics import (
    MAX_OPERATIONS,
    MULTIPROC_ENV,
    OTHER,
    Metrics,
    _WorkersFiles,
    build_time,
    multiprocess_folder,
)
from cachegql.server.request_info import request_info
from cachegql.server.tally import FLUSH_SECONDS
from tests.conftest import CLI, PAGES, LiveServer

LOOSE = PAGES / "loose" / "zlib-develop.txt"
TAGS = {"query": "query Tags { tags { name } }"}
BAD_HASH = {"query": 'query BadHash { spec(hash: "1") { hash } }'}
GENERATED_ID = re.compile(r"[0-9a-f]{32}")
JSON_FIELDS = {
    "time",
    "request_id",
    "method",
    "path",
    "status",
    "duration_ms",
    "bytes",
    "operation",
    "codes",
    "cache",
    "persisted",
    "client",
}


def _scrape(client: httpx.Client) -> list[Sample]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    families = text_string_to_metric_families(response.text)
    return [sample for family in families for sample in family.samples]


def _value(samples: list[Sample], name: str, **labels: str) -> float:
    """The sum of the samples `name` whose labels include `labels` (0 if none)."""
    return sum(
        s.value
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def _wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {seconds} s")
        time.sleep(0.01)


class _Lines(logging.Handler):
    """Keeps the messages logged to `cachegql.access`."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def json(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines]


@pytest.fixture
def access_lines() -> Iterator[_Lines]:
    logger = logging.getLogger("cachegql.access")
    saved = logger.level, logger.propagate, list(logger.handlers)
    handler = _Lines()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        _restore(logger, saved)


def _restore(logger: logging.Logger, saved: tuple[int, bool, list[logging.Handler]]) -> None:
    logger.setLevel(saved[0])
    logger.propagate = saved[1]
    logger.handlers[:] = saved[2]


@pytest.fixture(scope="module")
def pages_ix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ops") / "ix"
    build_index([PAGES], out)
    return out


# Metrics


def test_metrics_count_requests_errors_cache_and_reloads(tmp_path: Path) -> None:
    out = tmp_path / "ix"
    first = build_index([LOOSE], out)
    app = create_app(Settings(index=out, reload_interval=0))
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        before = _scrape(client)
        assert _value(before, "cachegql_requests_total") == 0
        assert _value(before, "cachegql_index_reloads_total") == 0
        assert _value(before, "cachegql_response_cache_requests_total", result="hit") == 0

        for _ in range(2):  # the second is answered by the response cache
            assert client.post("/graphql", json=TAGS).json()["data"]["tags"]
        assert client.post("/graphql", json=BAD_HASH).json()["errors"]
        assert client.get("/no/such/page").status_code == 404
        samples = _scrape(client)

        requests = "cachegql_requests_total"
        tags = {"path": "/graphql", "operation": "Tags"}
        assert _value(samples, requests, **tags, status="2xx", outcome="ok") == 2
        bad = {"path": "/graphql", "operation": "BadHash", "status": "2xx", "outcome": "error"}
        assert _value(samples, requests, **bad) == 1
        assert _value(samples, requests, path=OTHER, status="4xx", outcome="error") == 1
        assert _value(samples, requests, path="/metrics", operation="", outcome="ok") == 1
        assert _value(samples, requests) == 5  # the first scrape included, not this one

        errors = "cachegql_graphql_errors_total"
        assert _value(samples, errors, operation="BadHash", code="BAD_USER_INPUT") == 1
        assert _value(samples, errors) == 1

        cache = "cachegql_response_cache_requests_total"
        stats = client.get("/healthz").json()["response_cache"]
        assert _value(samples, cache, result="hit") == stats["hits"] == 1
        assert _value(samples, cache, result="miss") == stats["misses"] == 2

        # The cached answer executed nothing; the bad hash's plan raised: the stock path.
        executions = "cachegql_executions_total"
        assert _value(samples, executions, execution="compiled") == 1
        assert _value(samples, executions, execution="fallback") == 1
        assert _value(samples, executions) == 2

        duration = "cachegql_request_duration_seconds"
        assert _value(samples, duration + "_count", **tags) == 2
        assert _value(samples, duration + "_sum", **tags) > 0
        buckets = [
            s
            for s in samples
            if s.name == duration + "_bucket" and s.labels.items() >= tags.items()
        ]
        counts = [s.value for s in sorted(buckets, key=lambda s: float(s.labels["le"]))]
        assert counts == sorted(counts) and counts[-1] == 2  # cumulative, +Inf last

        build = first.folder.name
        assert _value(samples, "cachegql_index_build_info", build_id=build) == 1
        made = build_time(build)
        assert made is not None
        assert _value(samples, "cachegql_index_build_timestamp_seconds") == made
        assert 0 <= _value(samples, "cachegql_index_age_seconds") <= time.time() - made + 1
        assert _value(samples, "cachegql_index_specs", tag="develop") == 3

        second = build_index([PAGES], out)
        assert app.state.holder.reload_if_changed() is True
        broken = builds_folder(out) / "broken-build"
        broken.mkdir()
        (broken / "manifest.json").write_text('{"build_id": ')
        swap = tmp_path / ".ix.swap"
        swap.symlink_to(broken)
        swap.replace(out)
        assert app.state.holder.reload_if_changed() is False
        samples = _scrape(client)
        assert _value(samples, "cachegql_index_reloads_total", result="ok") == 1
        assert _value(samples, "cachegql_index_reloads_total", result="failed") == 1
        infos = [s for s in samples if s.name == "cachegql_index_build_info"]
        assert [s.labels["build_id"] for s in infos] == [second.folder.name]
        expected = client.get("/healthz").json()["tags"]
        assert len(expected) > 1
        for tag, count in expected.items():
            assert _value(samples, "cachegql_index_specs", tag=tag) == count


@pytest.mark.parametrize("compiled", [True, False])
def test_executions_are_counted_by_how_they_ran(pages_ix: Path, compiled: bool) -> None:
    """Each operation once, by the path that answered it: a plan, or the stock path and
    why; every kind is exposed from the start."""
    settings = Settings(index=pages_ix, reload_interval=0, response_cache_mb=0)
    app = create_app(dataclasses.replace(settings, compiled=compiled))
    requests = [
        TAGS,  # compiled
        BAD_HASH,  # the plan raises: fallback
        {"query": "{ __schema { queryType { name } } }"},  # introspection: uncovered
        {"query": "{ tags { nope } }"},  # fails validation: invalid
        {"query": "query ($n: Int!) { specs(first: $n) { totalCount } }"},  # no $n: invalid
    ]
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        assert {e.labels["execution"] for e in _executions(_scrape(client))} == set(EXECUTIONS)
        for body in requests:
            assert client.post("/graphql", json=body).status_code == 200
        counts = {e.labels["execution"]: e.value for e in _executions(_scrape(client))}
    if compiled:
        expected = {"compiled": 1, "fallback": 1, "uncovered": 1, "invalid": 2}
    else:
        expected = {"stock": 5}
    assert {k: v for k, v in counts.items() if v} == expected


def _executions(samples: list[Sample]) -> list[Sample]:
    return [s for s in samples if s.name == "cachegql_executions_total"]


def test_operation_names_are_bounded(pages_ix: Path) -> None:
    app = create_app(Settings(index=pages_ix, reload_interval=0, response_cache_mb=0))
    names = [f"Op{i}" for i in range(MAX_OPERATIONS + 5)]
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        for name in names:
            assert client.post("/graphql", json={"query": f"query {name} {{ tags {{ name }} }}"})
        samples = _scrape(client)
    seen = {
        s.labels["operation"]
        for s in samples
        if s.name == "cachegql_requests_total" and s.labels["path"] == "/graphql"
    }
    assert seen == {*names[:MAX_OPERATIONS], OTHER}
    assert _value(samples, "cachegql_requests_total", operation=OTHER) == 5


def test_odd_names_and_codes_are_counted_as_other(pages_ix: Path) -> None:
    metrics = Metrics(IndexHolder(pages_ix), max_operations=2)
    odd = ["not a name", "x" * 65, "Ok", "Fine", "OneTooMany"]
    for name in odd:
        scope: dict[str, Any] = {"type": "http"}
        info = request_info(scope)
        info.operation, info.codes = name, ["BAD_USER_INPUT", "weird code!"]
        metrics.observe(scope, info, 200, 0.001)
    samples = _metrics_of(metrics)
    operations = {
        s.labels["operation"]: s.value for s in samples if s.name == "cachegql_requests_total"
    }
    assert operations == {"Ok": 1, "Fine": 1, OTHER: 3}
    errors = "cachegql_graphql_errors_total"
    assert _value(samples, errors, code="BAD_USER_INPUT") == 5
    assert _value(samples, errors, code=OTHER) == 5


def _metrics_of(metrics: Metrics) -> list[Sample]:
    text = generate_latest(metrics.registry).decode()
    return [s for f in text_string_to_metric_families(text) for s in f.samples]


# Request ids and access log lines


def test_request_ids_are_honoured_or_generated(pages_ix: Path, access_lines: _Lines) -> None:
    app = create_app(Settings(index=pages_ix, reload_interval=0, log_format="json"))
    reasonable = ["abc-123", "Root=1-5f84c7a1-2bd8e6d9;Sampled=1", "x" * 128]
    unreasonable = ["", "has space", "x" * 129, "tab\there", "caf\u00e9"]
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        for sent in reasonable:
            response = client.post("/graphql", json=TAGS, headers={"X-Request-ID": sent})
            assert response.headers["x-request-id"] == sent
        generated = []
        for sent in unreasonable:
            response = client.get("/healthz", headers=[(b"X-Request-ID", sent.encode())])
            generated.append(response.headers["x-request-id"])
        generated.append(client.get("/nowhere").headers["x-request-id"])
        assert all(GENERATED_ID.fullmatch(g) for g in generated), generated
        assert len(set(generated)) == len(generated)
        ids = [*reasonable, *generated]
        _wait_for(lambda: len(access_lines.lines) >= len(ids))
    assert sorted(line["request_id"] for line in access_lines.json()) == sorted(ids)


def test_json_lines_one_per_request(pages_ix: Path, access_lines: _Lines) -> None:
    app = create_app(Settings(index=pages_ix, reload_interval=0, log_format="json"))
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        sent = [
            client.post("/graphql", json=TAGS, headers={"X-Request-ID": "first"}),
            client.post("/graphql", json=TAGS, headers={"X-Request-ID": "repeat"}),
            client.post("/graphql", json=BAD_HASH, headers={"X-Request-ID": "bad"}),
            client.get("/healthz?verbose=1", headers={"X-Request-ID": "health"}),
            client.get("/missing", headers={"X-Request-ID": "missing"}),
        ]
        _wait_for(lambda: len(access_lines.lines) >= len(sent))
        time.sleep(0.05)  # nothing more comes
    lines = {line["request_id"]: line for line in access_lines.json()}
    assert len(access_lines.lines) == len(lines) == len(sent)
    for response in sent:
        line = lines[response.headers["x-request-id"]]
        assert set(line) == JSON_FIELDS
        assert line["status"] == response.status_code
        assert line["method"] == response.request.method
        assert line["path"] == response.request.url.path
        assert line["bytes"] == response.num_bytes_downloaded
        assert 0 < line["duration_ms"] < 5000
        arrived = datetime.fromisoformat(line["time"])
        assert line["time"].endswith("Z") and arrived.tzinfo == UTC
        assert abs(arrived.timestamp() - time.time()) < 60
        host, port = line["client"].rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
    assert lines["first"]["operation"] == "Tags" and lines["first"]["cache"] == "miss"
    assert lines["repeat"]["cache"] == "hit" and lines["repeat"]["codes"] == []
    assert lines["bad"]["operation"] == "BadHash"
    assert lines["bad"]["codes"] == ["BAD_USER_INPUT"]
    assert lines["health"]["operation"] is None and lines["health"]["cache"] is None
    assert lines["health"]["path"] == "/healthz"  # no query string
    assert lines["missing"]["status"] == 404


def test_text_lines_and_disabled_log(pages_ix: Path, access_lines: _Lines) -> None:
    text = create_app(Settings(index=pages_ix, reload_interval=0, log_format="text"))
    with LiveServer(text) as url, httpx.Client(base_url=url, timeout=10) as client:
        client.post("/graphql", json=BAD_HASH, headers={"X-Request-ID": "t-1"})
        _wait_for(lambda: len(access_lines.lines) == 1)
    pattern = (
        r'127\.0\.0\.1:\d+ "POST /graphql" 200 \d+\.\dms \d+B op=BadHash '
        r"errors=BAD_USER_INPUT cache=miss id=t-1"
    )
    assert re.fullmatch(pattern, access_lines.lines[0]), access_lines.lines[0]

    quiet = create_app(Settings(index=pages_ix, reload_interval=0, access_log=False))
    with LiveServer(quiet) as url, httpx.Client(base_url=url, timeout=10) as client:
        assert GENERATED_ID.fullmatch(client.get("/healthz").headers["x-request-id"])
        time.sleep(0.05)
    assert len(access_lines.lines) == 1


async def _boom(request: Request) -> Response:
    raise RuntimeError("boom (expected by the test)")


async def _stream(request: Request) -> Response:
    async def chunks() -> AsyncIterator[bytes]:
        for i in range(3):
            yield b"chunk %d\n" % i

    return StreamingResponse(chunks(), media_type="text/plain")


def test_errors_and_streams_are_logged_and_counted(pages_ix: Path, access_lines: _Lines) -> None:
    metrics = Metrics(IndexHolder(pages_ix))
    app = Starlette(
        routes=[
            Route("/boom", _boom),
            Route("/stream", _stream),
            Route("/metrics", metrics.endpoint),
        ],
        middleware=[
            Middleware(AccessLog, log_format="json", observe=metrics.observe),
        ],
    )
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        # uvicorn closes a connection whose app raised: ask for that, not to reuse it
        boom = client.get("/boom", headers={"X-Request-ID": "boom", "Connection": "close"})
        assert boom.status_code == 500 and boom.headers["x-request-id"] == "boom"
        stream = client.get("/stream")
        assert stream.text == "chunk 0\nchunk 1\nchunk 2\n"
        _wait_for(lambda: len(access_lines.lines) == 2)
        samples = _scrape(client)
    failed, streamed = access_lines.json()[:2]
    assert failed["status"] == 500 and failed["request_id"] == "boom"
    assert streamed["status"] == 200 and streamed["bytes"] == stream.num_bytes_downloaded
    assert streamed["request_id"] == stream.headers["x-request-id"]
    requests = "cachegql_requests_total"
    assert _value(samples, requests, path="/boom", status="5xx", outcome="error") == 1
    assert _value(samples, requests, path="/stream", status="2xx", outcome="ok") == 1


def test_configure_logger_writes_bare_json_lines(pages_ix: Path) -> None:
    logger = logging.getLogger("cachegql.access")
    saved = logger.level, logger.propagate, list(logger.handlers)
    out = StringIO()
    try:
        configure_logger("json", out)
        configure_logger("json", out)  # again: replaces, does not add
        app = create_app(Settings(index=pages_ix, reload_interval=0, log_format="json"))
        with LiveServer(app) as url, httpx.Client(base_url=url, timeout=10) as client:
            client.get("/healthz", headers={"X-Request-ID": "bare"})
            _wait_for(lambda: out.getvalue().endswith("\n"))
    finally:
        _restore(logger, saved)
    (line,) = out.getvalue().splitlines()
    assert json.loads(line)["request_id"] == "bare"


# Several workers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_a_workers_file_not_yet_sized_is_skipped(pages_ix: Path, tmp_path: Path) -> None:
    """Two workers starting together: one registers the summed files (and is scraped) while
    the other's file is made but still empty; prometheus_client's own collector fails on it,
    within the worker's start (`struct.error`, seen once in a review's run)."""
    started = MmapedDict(str(tmp_path / "counter_1.db"))  # type: ignore[no-untyped-call]
    key = mmap_key("cachegql_requests", "cachegql_requests_total", ["path"], ["/graphql"], "h")
    started.write_value(key, 7.0, 0.0)  # type: ignore[no-untyped-call]
    started.close()  # type: ignore[no-untyped-call]
    (tmp_path / "counter_2.db").touch()
    with pytest.raises(struct.error):
        MultiProcessCollector(CollectorRegistry(auto_describe=True), path=str(tmp_path))  # type: ignore[no-untyped-call]
    registry = CollectorRegistry(auto_describe=True)
    registry.register(_WorkersFiles(str(tmp_path)))
    families = text_string_to_metric_families(generate_latest(registry).decode())
    samples = [sample for family in families for sample in family.samples]
    assert _value(samples, "cachegql_requests_total", path="/graphql") == 7
    # A worker's start, in a process of its own (the files switch prometheus_client's values).
    start = (
        "import sys; from pathlib import Path\n"
        "from cachegql.server.holder import IndexHolder\n"
        "from cachegql.server.metrics import Metrics\n"
        "Metrics(IndexHolder(Path(sys.argv[1])))\n"
    )
    env = {**os.environ, MULTIPROC_ENV: str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", start, str(pages_ix)], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode()


def test_multiprocess_folder_is_made_and_removed() -> None:
    before = os.environ.get(MULTIPROC_ENV)
    with multiprocess_folder(1) as none:
        assert none is None and os.environ.get(MULTIPROC_ENV) == before
    with multiprocess_folder(2) as folder:
        assert folder is not None and folder.is_dir() and not any(folder.iterdir())
        assert os.environ[MULTIPROC_ENV] == str(folder)
    assert not folder.exists() and os.environ.get(MULTIPROC_ENV) == before


def test_one_worker_serves_the_build_its_command_opened(pages_ix: Path, tmp_path: Path) -> None:
    """`cachegql serve` opens the build to refuse a damaged one before it starts; its one
    worker, in the same process, serves that store rather than verify and load it again."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [CLI, "serve", "--index", str(pages_ix), "--port", str(port)]
    command += ["--reload-interval", "0"]
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        _wait_for(lambda: _answers(url, process, log), seconds=30)
        assert _post(url) == 200
        assert _value(_scrape_at(url), "cachegql_requests_total", operation="Ping") == 1
    finally:
        process.terminate()
        process.wait(timeout=15)
    opened = re.findall(r"index build \S+: verified in [\d.]+ s, loaded in", log.read_text())
    assert len(opened) == 1, log.read_text()


def test_two_workers_report_the_sum(pages_ix: Path, tmp_path: Path) -> None:
    """`cachegql serve --workers 2`: whichever worker answers, /metrics counts all requests."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    env.pop(MULTIPROC_ENV, None)
    command = [CLI, "serve", "--index", str(pages_ix), "--port", str(port), "--workers", "2"]
    command += ["--reload-interval", "0", "--log-format", "json"]
    log = tmp_path / "serve.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        _wait_for(lambda: _answers(url, process, log), seconds=30)
        folders = list(temp.glob("cachegql-metrics-*"))
        assert len(folders) == 1, "serve --workers 2 made no metrics folder"
        sent = 0
        totals: set[int] = set()
        deadline = time.monotonic() + 15
        # Both answered some when a worker's own count is neither none nor all of them.
        while not any(0 < total < sent for total in totals):
            assert time.monotonic() < deadline, f"one worker got all: {totals}, {sent} sent"
            with ThreadPoolExecutor(4) as pool:
                statuses = list(pool.map(lambda _: _post(url), range(20)))
            assert statuses == [200] * 20
            sent += 20
            # Each worker's response cache counts what that worker answered.
            totals = {_cached(url) for _ in range(8)}
        assert len({f.name.split("_")[-1] for f in folders[0].glob("counter_*.db")}) == 2
        # A worker adds its counts to the shared files within FLUSH_SECONDS (server/tally.py).
        requests = "cachegql_requests_total"
        _wait_for(
            lambda: _value(_scrape_at(url), requests, path="/graphql", operation="Ping") == sent,
            seconds=FLUSH_SECONDS + 10,
        )
        for _ in range(4):  # fresh connections: either worker may answer
            samples = _scrape_at(url)
            assert _value(samples, requests, path="/graphql", operation="Ping") == sent
            duration = "cachegql_request_duration_seconds_count"
            assert _value(samples, duration, path="/graphql") == sent
            cache = "cachegql_response_cache_requests_total"
            assert _value(samples, cache) == sent
            assert _value(samples, cache, result="miss") >= 2  # at least one per worker
            misses = _value(samples, cache, result="miss")
            executions = "cachegql_executions_total"
            assert _value(samples, executions, execution="compiled") == misses
            assert _value(samples, "cachegql_index_specs") > 0
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
            raise
    assert not folders[0].exists(), "the metrics folder outlived the server"
    lines = [json.loads(line) for line in log.read_text().splitlines() if '"request_id"' in line]
    assert sum(line["path"] == "/graphql" for line in lines) == sent
    # The command checks the build, then each worker process opens it for itself.
    assert log.read_text().count(": verified in ") == 3


def _answers(url: str, process: subprocess.Popen[bytes], log: Path) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"serve exited: {log.read_text()}")
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _post(url: str) -> int:
    query = {"query": "query Ping { tags { name } }"}
    return httpx.post(f"{url}/graphql", json=query, timeout=5).status_code


def _cached(url: str) -> int:
    stats = httpx.get(f"{url}/healthz", timeout=5).json()["response_cache"]
    total: int = stats["hits"] + stats["misses"]
    return total


def _scrape_at(url: str) -> list[Sample]:
    with httpx.Client(base_url=url, timeout=5) as client:
        return _scrape(client)
