"""Prometheus metrics at /metrics, correct with several worker processes.

Metric names (Prometheus text format; counters carry the `_total` suffix):

- `cachegql_requests_total{path, operation, status, outcome}`: HTTP requests once
  answered. `path` is the route's path template (`/graphql`, `/healthz`, ...), `(other)`
  when no route matched; `operation` the GraphQL operation name, `""` when there is none;
  `status` the status class (`2xx` ... `5xx`); `outcome` `error` for a status of 400 or
  more or a GraphQL answer with errors, else `ok`.
- `cachegql_request_duration_seconds{path, operation}`: histogram of the time from the
  request's arrival to the last byte of its answer.
- `cachegql_graphql_errors_total{operation, code}`: GraphQL errors by `extensions.code`,
  one per error of an answer.
- `cachegql_response_cache_requests_total{result}`: `hit` or `miss` of the response cache.
- `cachegql_persisted_queries_total{result}`: `hit`, `miss` or `registered` (automatic
  persisted queries).
- `cachegql_executions_total{execution}`: GraphQL operations executed, by how:
  `compiled` (answered by a compiled plan), `uncovered`, `fallback`, `invalid`, `stock`
  or `abandoned` (`cachegql.schema.EXECUTIONS` says what each means). A response cache
  hit executes nothing and is not counted.
- `cachegql_index_reloads_total{result}`: attempts to load a newly published index build,
  `ok` or `failed`, summed over workers (each worker loads it).
- `cachegql_index_build_info{build_id}`: 1, labelled with the build being served.
- `cachegql_index_build_timestamp_seconds`: when that build was made (from its id,
  `YYYYmmddTHHMMSS-xxxxxx`, UTC).
- `cachegql_index_age_seconds`: its age at scrape time.
- `cachegql_index_specs{tag}`: specs per tag of that build.

Bounded labels: each worker admits the first `max_operations` (100) distinct operation
names it sees that are valid GraphQL names of at most 64 characters, and the first 32
error codes shaped like codes (`A_CODE`); any other name or code is counted as `(other)`
(which no GraphQL name can be). A client sending ever new names thus adds at most 100
values per worker; `path` is a route's template, never the path requested.

Several workers: uvicorn's workers are processes, each with its own memory. When
`PROMETHEUS_MULTIPROC_DIR` names a folder (`cachegql serve --workers N` makes one per run
with `multiprocess_folder`), counters and histograms are kept in files there by
prometheus_client's multiprocess mode, and a scrape answered by any worker sums all of
them. The index gauges are computed at scrape time from the answering worker's index:
every worker serves the same published index and picks up a new build within the reload
interval. A process holds one `Metrics` then (two would write the same series). Requests
are counted in batches (`Tally`): a scrape sees the other workers' up to a second late. Without
the variable, each `Metrics` has a registry of its own (tests create many apps in one
process), and counters also show their `_created` time.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, values
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from cachegql.schema import EXECUTIONS
from cachegql.server.holder import IndexHolder
from cachegql.server.request_info import RequestInfo
from cachegql.server.tally import Tally

__all__ = ["MULTIPROC_ENV", "Metrics", "multiprocess_folder"]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
OTHER = "(other)"
MAX_OPERATIONS = 100
MAX_CODES = 32
MAX_KINDS = 1024
"""Kinds of requests (route, operation label, status, ...) whose series are kept."""
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,63}")
_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_STATUS_CLASSES = ("0xx", "1xx", "2xx", "3xx", "4xx", "5xx")
PERSISTED_RESULTS = ("hit", "miss", "registered")


@contextlib.contextmanager
def multiprocess_folder(workers: int) -> Iterator[Path | None]:
    """With `workers` > 1, a new empty `PROMETHEUS_MULTIPROC_DIR` for the run, removed at exit.

    Enter it before uvicorn starts its workers: they inherit the environment. With one
    worker, metrics stay in memory and nothing is done.
    """
    if workers <= 1:
        yield None
        return
    previous = os.environ.get(MULTIPROC_ENV)
    folder = Path(tempfile.mkdtemp(prefix="cachegql-metrics-"))
    os.environ[MULTIPROC_ENV] = str(folder)
    try:
        yield folder
    finally:
        if previous is None:
            os.environ.pop(MULTIPROC_ENV, None)
        else:
            os.environ[MULTIPROC_ENV] = previous
        shutil.rmtree(folder, ignore_errors=True)


class Metrics:
    """The metrics of one worker process, and the /metrics endpoint."""

    def __init__(self, holder: IndexHolder, *, max_operations: int = MAX_OPERATIONS) -> None:
        self.holder = holder
        self.max_operations = max_operations
        folder = os.environ.get(MULTIPROC_ENV)
        self.multiprocess = bool(folder)
        self.registry = CollectorRegistry(auto_describe=True)
        if folder:
            _use_multiprocess_values()
            self.registry.register(_WorkersFiles(folder))
        own = None if folder else self.registry  # in files, or in this registry
        self.registry.register(_IndexCollector(holder))
        self._requests = Counter(
            "cachegql_requests",
            "HTTP requests answered, by route, GraphQL operation, status class and outcome",
            ["path", "operation", "status", "outcome"],
            registry=own,
        )
        self._duration = Histogram(
            "cachegql_request_duration_seconds",
            "Time from a request's arrival to the end of its answer",
            ["path", "operation"],
            buckets=BUCKETS,
            registry=own,
        )
        self._errors = Counter(
            "cachegql_graphql_errors",
            "GraphQL errors answered, by operation and extensions.code",
            ["operation", "code"],
            registry=own,
        )
        self._cache = Counter(
            "cachegql_response_cache_requests",
            "Requests the response cache was asked about: hit or miss",
            ["result"],
            registry=own,
        )
        self._persisted = Counter(
            "cachegql_persisted_queries",
            "Automatic persisted queries: hit, miss or registered",
            ["result"],
            registry=own,
        )
        self._executions = Counter(
            "cachegql_executions",
            "GraphQL operations executed: by a compiled plan, or by the stock path and why",
            ["execution"],
            registry=own,
        )
        self._reloads = Counter(
            "cachegql_index_reloads",
            "Attempts to load a newly published index build (each worker loads it)",
            ["result"],
            registry=own,
        )
        # Children by label values (labels() validates each time; this is a dict lookup).
        self.tally = Tally(BUCKETS)
        self._request_children: dict[tuple[str, str, str, str], Counter] = {}
        self._duration_children: dict[tuple[str, str], Histogram] = {}
        self._error_children: dict[tuple[str, str], Counter] = {}
        self._kinds: dict[tuple[str | int | None, ...], tuple[tuple[Counter, ...], Histogram]] = {}
        self._operations: set[str] = set()
        self._codes: set[str] = set()
        # Created now, so that they are exposed (as 0) before the first of each.
        self._cache_children = {r: self._cache.labels(r) for r in ("hit", "miss")}
        self._persisted_children = {r: self._persisted.labels(r) for r in PERSISTED_RESULTS}
        self._execution_children = {e: self._executions.labels(e) for e in EXECUTIONS}
        for result in ("ok", "failed"):
            self._reloads.labels(result)

    def reloaded(self, ok: bool) -> None:
        """An index reload succeeded (or failed)."""
        self._reloads.labels("ok" if ok else "failed").inc()

    async def endpoint(self, request: Request) -> Response:
        """GET /metrics: everything, in the format the scraper accepts (Prometheus text)."""
        self.tally.flush()
        encode, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encode(self.registry), headers={"Content-Type": content_type})

    def observe(self, scope: Scope, info: RequestInfo, status: int, seconds: float) -> None:
        """Count one answered request (`info`: its record), `seconds` after it arrived."""
        path = getattr(scope.get("route"), "path", None) or OTHER
        operation = self._operation(info.operation)  # a label: any name sent is bounded
        kind = (path, operation, status, info.cache, info.persisted, info.execution)
        # The series a request adds to, found once per kind of request (without errors:
        # their codes vary) rather than label by label each time.
        counted = None if info.codes else self._kinds.get(kind)
        if counted is None:
            counted = self._counted(path, operation, status, info)
            if not info.codes and len(self._kinds) < MAX_KINDS:
                self._kinds[kind] = counted
        tally = self.tally
        tally.count_each(counted[0])
        tally.observe(counted[1], seconds)
        tally.flush_later()

    def _counted(
        self, path: str, operation: str, status: int, info: RequestInfo
    ) -> tuple[tuple[Counter, ...], Histogram]:
        """The counters a request adds one to (a counter twice: two), and its histogram."""
        failed = status >= 400 or bool(info.codes)
        status_class = _STATUS_CLASSES[status // 100] if 0 < status < 600 else OTHER
        key = (path, operation, status_class, "error" if failed else "ok")
        requests = self._request_children.get(key)
        if requests is None:
            requests = self._request_children[key] = self._requests.labels(*key)
        counters = [requests]
        timing = self._duration_children.get(key[:2])
        if timing is None:
            timing = self._duration_children[key[:2]] = self._duration.labels(path, operation)
        for code in info.codes:
            pair = (operation, self._code(code))
            errors = self._error_children.get(pair)
            if errors is None:
                errors = self._error_children[pair] = self._errors.labels(*pair)
            counters.append(errors)
        if info.cache is not None:
            counters.append(self._cache_children.get(info.cache) or self._cache.labels(OTHER))
        if info.persisted is not None:
            persisted = self._persisted_children.get(info.persisted)
            counters.append(persisted or self._persisted.labels(OTHER))
        if info.execution is not None:
            counters.append(self._execution_children[info.execution])
        return tuple(counters), timing

    def _operation(self, name: str | None) -> str:
        if not name:
            return ""
        if name in self._operations:
            return name
        if len(self._operations) < self.max_operations and _NAME.fullmatch(name):
            self._operations.add(name)
            return name
        return OTHER

    def _code(self, code: str) -> str:
        if code in self._codes:
            return code
        if len(self._codes) < MAX_CODES and _CODE.fullmatch(code):
            self._codes.add(code)
            return code
        return OTHER


class _WorkersFiles(MultiProcessCollector):
    """The workers' files, summed: as prometheus_client's, without reading a file that a
    worker starting at the same time has made but not yet sized (empty: reading it fails
    with `struct.error`). Registered without being read (it describes nothing), which the
    registry would otherwise do at once, within the worker's start."""

    def __init__(self, folder: str) -> None:
        super().__init__(None, path=folder)  # type: ignore[no-untyped-call]

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        files = [str(f) for f in Path(self._path).glob("*.db") if f.stat().st_size > 0]
        merged: Iterable[Metric] = self.merge(files, accumulate=True)  # type: ignore[no-untyped-call]
        return merged


class _IndexCollector(Collector):
    """The index this worker serves, read at scrape time."""

    def __init__(self, holder: IndexHolder) -> None:
        self.holder = holder

    def collect(self) -> Iterable[Metric]:
        store = self.holder.store
        info = GaugeMetricFamily(
            "cachegql_index_build_info", "The index build being served", labels=["build_id"]
        )
        info.add_metric([store.build_id], 1)
        yield info
        made = build_time(store.build_id)
        if made is not None:
            yield GaugeMetricFamily(
                "cachegql_index_build_timestamp_seconds",
                "When the index build being served was made (Unix time)",
                value=made,
            )
            yield GaugeMetricFamily(
                "cachegql_index_age_seconds",
                "Age of the index build being served",
                value=max(0.0, time.time() - made),
            )
        specs = GaugeMetricFamily("cachegql_index_specs", "Specs per tag", labels=["tag"])
        for tag in store.tags:
            specs.add_metric([tag], store.snapshots[tag].num_specs)
        yield specs


def build_time(build_id: str) -> float | None:
    """The Unix time of a build id `YYYYmmddTHHMMSS-xxxxxx` (UTC), None if it has none."""
    try:
        made = datetime.strptime(build_id[:15], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    return made.timestamp()


def _use_multiprocess_values() -> None:
    """Make metrics created from now on write to the multiprocess folder.

    prometheus_client chooses where values live when it is first imported: if that was
    before the variable was set (the CLI's process imports this module first), switch.
    """
    if not getattr(values.ValueClass, "_multiprocess", False):
        values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]
