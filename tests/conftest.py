"""Shared fixtures: the test pages, an index built from them, and the app over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import anyio.to_thread
import httpx
import orjson
import pytest
import uvicorn
from playwright.sync_api import Browser, expect, sync_playwright
from starlette.applications import Starlette
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.types import ExecutionResult

from cachegql.demo import DemoConfig, MirrorConfig, write_mirror, write_pages
from cachegql.index import BuildReport, IndexStore, Snapshot, build_index
from cachegql.schema import COMPILED_STATS, DEFAULT_MAX_FIRST, Context, build_schema
from cachegql.server.app import Settings, create_app
from tests import oracle

# The installed console script, beside this interpreter: what users run.
CLI = str(Path(sys.executable).with_name("cachegql"))


def untraced_env() -> dict[str, str]:
    """This environment, without what makes a subprocess measure its coverage (under
    `make coverage`): for commands whose memory is measured (the tracer's would count) or that
    run under a file size limit (the coverage data file is written at exit)."""
    return {k: v for k, v in os.environ.items() if k != "COVERAGE_PROCESS_CONFIG"}


FIXTURES = Path(__file__).parent / "fixtures"
PAGES = FIXTURES / "pages"
SHARED = Path(os.environ.get("CACHEGQL_SHARED", Path(__file__).resolve().parents[2] / "shared"))


@pytest.fixture(scope="session")
def pages_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the test pages, built once per session (tests must not modify it)."""
    out = tmp_path_factory.mktemp("index") / "ix"
    build_index([PAGES], out)
    return out


@pytest.fixture(scope="session", params=["pages", "mirror"])
def demo_snapshot(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Snapshot]:
    """The tag of a demo pages index (tarball names), then of a demo build cache's (stacks,
    namespaces, sizes): tests of what a snapshot reads run on both (read-only)."""
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "pages":
        write_pages(DemoConfig(specs=4000), folder / "pages")
        build_index([folder / "pages"], folder / "ix")
    else:
        summary = write_mirror(MirrorConfig(specs=800, packages=40, stacks=4, seed=3), folder)
        build_index([summary.mirror], folder / "ix", tag="develop")
    store = IndexStore(folder / "ix")
    yield store.snapshot(store.default_tag)
    store.close()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The local files the ingest and the fingerprints read whole, map or hash from now on (the
    real readers, counted), spec manifests included."""
    from cachegql.index.ingest import files, locations, recording, tarball_sizes

    read: list[str] = []

    def counting(real: Any) -> Any:
        def counted(path: Path, *args: Any, **kwargs: Any) -> Any:
            read.append(str(path))
            return real(path, *args, **kwargs)

        return counted

    monkeypatch.setattr(locations, "read_regular", counting(files.read_regular))
    monkeypatch.setattr(locations, "map_regular", counting(files.map_regular))
    monkeypatch.setattr(recording, "read_regular_status", counting(files.read_regular_status))
    monkeypatch.setattr(recording, "map_regular_status", counting(files.map_regular_status))
    monkeypatch.setattr(recording, "sha256_regular_status", counting(files.sha256_regular_status))
    # Spec manifests read in this process (fewer than `tarball_sizes.PROCESS_FROM`).
    monkeypatch.setattr(tarball_sizes, "read_regular_status", counting(files.read_regular_status))
    return read


@pytest.fixture(scope="session")
def expected() -> dict[str, dict[str, dict[str, Any]]]:
    """The test pages read independently: {tag: {hash: spec}}."""
    return oracle.read_specs([PAGES])


class LiveServer:
    """A real uvicorn serving an app on 127.0.0.1 (a free port) in a background thread."""

    def __init__(self, app: Starlette, http: Any = "auto") -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", http=http
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@contextlib.contextmanager
def worker_thread_held(server: LiveServer, app: Starlette) -> Iterator[None]:
    """One of the app's query threads taken and held, as by a slow query, until the block ends."""
    loop = server.server.servers[0].get_loop()
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        release.wait(timeout=60)

    async def occupy() -> None:
        await anyio.to_thread.run_sync(hold, limiter=app.state.offloader.limiter)

    occupied = asyncio.run_coroutine_threadsafe(occupy(), loop)
    try:
        assert holding.wait(timeout=10), "the worker thread was never taken"
        yield
    finally:
        release.set()
        occupied.result(timeout=10)


class Differential:
    """Executes requests in-process through strawberry's stock execution context and
    requires the same JSON, data and errors, as the server's answer (which comes from the
    compiled plans of schema/direct.py, or the fast execution of schema/execution.py where
    a plan steps aside) and as the compiled path run here. An answer without errors must
    be the same bytes as `{"data": ...}` of the stock path."""

    def __init__(self, index: Path, max_first: int = DEFAULT_MAX_FIRST) -> None:
        self.store = IndexStore(index)
        self.max_first = max_first
        self.stock = build_schema(
            max_first, execution=StrawberryGraphQLCoreExecutionContext, compiled=False
        )
        self.compiled = build_schema(max_first)
        self.compared = 0

    def check(self, query: str, variables: dict[str, Any], served: bytes) -> None:
        context = Context(self.store, self.max_first)
        result = self.stock.execute_sync(query, variable_values=variables, context_value=context)
        stock = orjson.dumps(_answer(result))
        parsed = orjson.loads(served)
        fast = {"data": parsed.get("data"), "errors": parsed.get("errors", [])}
        assert orjson.dumps(fast) == stock, f"served and stock differ: {query!r}"
        if not result.errors:
            assert served == orjson.dumps({"data": result.data}), f"bytes differ: {query!r}"
        answer = self.compiled.answer_sync(query, variables, Context(self.store, self.max_first))
        if answer.body is not None:
            assert not result.errors, f"a plan answered what has errors: {query!r}"
            assert answer.body == orjson.dumps({"data": result.data}), f"plan differs: {query!r}"
        else:
            assert answer.result is not None
            assert orjson.dumps(_answer(answer.result)) == stock, f"stock differs: {query!r}"
        self.compared += 1


class Pair:
    """The stock and the compiled schema over one index."""

    def __init__(self, index: Path) -> None:
        self.store = IndexStore(index)
        self.stock = build_schema(execution=StrawberryGraphQLCoreExecutionContext, compiled=False)
        self.compiled = build_schema()

    def stock_answer(self, query: str, variables: dict[str, Any]) -> bytes:
        """The stock path's answer, as the endpoint writes it when it has no errors."""
        result = self.stock.execute_sync(
            query, variable_values=variables, context_value=Context(self.store)
        )
        if not result.errors:
            return orjson.dumps({"data": result.data})
        errors = [e.formatted for e in result.errors]
        return orjson.dumps({"data": result.data, "errors": errors})

    def compiled_answer(self, query: str, variables: dict[str, Any]) -> tuple[str, bytes]:
        answer = self.compiled.answer_sync(query, variables, Context(self.store))
        if answer.body is not None:
            return answer.execution, answer.body
        assert answer.result is not None
        result = answer.result
        if not result.errors:
            return answer.execution, orjson.dumps({"data": result.data})
        errors = [e.formatted for e in result.errors]
        return answer.execution, orjson.dumps({"data": result.data, "errors": errors})

    def outcome(self, query: str, **variables: Any) -> str:
        """How the compiled path answered `query`, once its bytes are checked to equal
        the stock path's; the process's counters agree."""
        before = dict(COMPILED_STATS)
        execution, compiled = self.compiled_answer(query, variables)
        assert compiled == self.stock_answer(query, variables), query
        changed = [k for k, v in COMPILED_STATS.items() if v != before.get(k, 0)]
        assert changed == [execution], changed
        return execution


@pytest.fixture(scope="module")
def pair(pages_index: Path) -> Iterator[Pair]:
    pair = Pair(pages_index)
    yield pair
    pair.store.close()


def _answer(result: ExecutionResult) -> dict[str, Any]:
    """The data and errors of a result, as compared."""
    return {"data": result.data, "errors": [e.formatted for e in result.errors or ()]}


class GraphQLClient:
    """Posts queries to the app over HTTP and returns the JSON body; with a `differential`,
    also checks that the fast and the stock execution agree on each query."""

    def __init__(self, client: httpx.Client, differential: Differential | None = None) -> None:
        self.http = client
        self.differential = differential

    def __call__(self, query: str, **variables: Any) -> dict[str, Any]:
        response = self.http.post("/graphql", json={"query": query, "variables": variables})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        if self.differential is not None:
            self.differential.check(query, variables, response.content)
        return body

    def data(self, query: str, **variables: Any) -> dict[str, Any]:
        body = self(query, **variables)
        assert "errors" not in body, body["errors"]
        data: dict[str, Any] = body["data"]
        return data

    def error(self, query: str, **variables: Any) -> dict[str, Any]:
        body = self(query, **variables)
        assert body.get("errors"), body
        error: dict[str, Any] = body["errors"][0]
        return error


@contextlib.contextmanager
def serving(
    index: Path, max_first: int = DEFAULT_MAX_FIRST, *, differential: bool = True
) -> Iterator[GraphQLClient]:
    """The real app serving `index` on 127.0.0.1, and a client for it that also compares
    the fast and the stock execution of every query it sends; `differential=False` for a
    test that compares two builds' answers with each other: the API tests hold the fast
    path to the stock one on their indexes, and doing it again for every answer of
    both builds was a quarter of test_incremental.py's time (120 -> 86 s on two
    workers)."""
    app = create_app(Settings(index=index, max_first=max_first, reload_interval=0))
    checker = Differential(index, max_first) if differential else None
    with LiveServer(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield GraphQLClient(client, checker)
    if checker is not None:
        checker.store.close()


@pytest.fixture(scope="session")
def gql(pages_index: Path) -> Iterator[GraphQLClient]:
    with serving(pages_index) as client:
        yield client


def skip_unless_ci(message: str) -> NoReturn:
    """Skip a test whose tools or data are missing here; fail it under CI=true, where
    they must be present (.ci/run installs them), so that it is never skipped silently."""
    if os.environ.get("CI") == "true":
        pytest.fail(message + "; CI=true requires it")
    pytest.skip(message)


def shared_or_skip() -> Path:
    """../shared, or skip (but fail under CI, where it must exist)."""
    if (SHARED / "corpus").is_dir():
        return SHARED
    skip_unless_ci(
        f"corpus suite: {SHARED}/corpus not found (set CACHEGQL_SHARED to its parent folder)"
    )


@pytest.fixture(scope="session")
def corpus_sources() -> list[Path]:
    """The real pages: cache.spack.io's _cache folder and the two seed files."""
    shared = shared_or_skip()
    return [shared / "corpus" / "cache.spack.io" / "_cache", shared / "seeds"]


@pytest.fixture(scope="session")
def corpus_expected(corpus_sources: list[Path]) -> dict[str, dict[str, dict[str, Any]]]:
    """The real pages read independently: {tag: {hash: spec}}."""
    return oracle.read_specs(corpus_sources)


@pytest.fixture(scope="session")
def corpus_build(
    corpus_sources: list[Path], tmp_path_factory: pytest.TempPathFactory
) -> BuildReport:
    """An index of the real pages, built once per session, and its build report."""
    return build_index(corpus_sources, tmp_path_factory.mktemp("corpus") / "ix")


@pytest.fixture(scope="session")
def corpus_gql(corpus_build: BuildReport) -> Iterator[GraphQLClient]:
    with serving(corpus_build.out) as client:
        yield client


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The documentation site built strictly (`make docs-build`) into a temporary folder."""
    if importlib.util.find_spec("mkdocs") is None:
        skip_unless_ci("mkdocs is not installed (`make .venv/.installed-dev` installs it)")
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, headless, for one test module (tests/browser.py opens tabs in it;
    module scope: Playwright's event loop does not outlive the module's tests)."""
    from tests.browser import CHROMIUM_ARGS, LOAD_MS, WAIT_MS, chromium_or_skip

    executable = chromium_or_skip()
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as pw:
        yield pw.chromium.launch(
            executable_path=str(executable), args=CHROMIUM_ARGS, timeout=LOAD_MS
        )
