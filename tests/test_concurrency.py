"""The event loop stays free while an expensive query runs, and pages do not read per item."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from cachegql.demo import DemoConfig, write_pages
from cachegql.index import IndexStore, build_index
from cachegql.schema import Context, build_schema
from cachegql.server.app import Settings, create_app
from cachegql.server.offload import runs_inline
from tests.conftest import LiveServer, worker_thread_held

EXPENSIVE = '{ specs(search: "build", first: 100) { totalCount facets { versions { value } } } }'


def cheap(number: int) -> str:
    """A cheap query, different each time so that no response cache can answer it."""
    return f"{{ tags {{ name numSpecs }} t{number}: tags {{ name }} }}"


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    write_pages(DemoConfig(packages=60, specs=3000, seed=5), root / "pages")
    build_index([root / "pages"], root / "ix")
    return root / "ix"


@pytest.fixture(scope="module")
def app(demo_index: Path) -> Starlette:
    return create_app(Settings(index=demo_index, reload_interval=0, threads=1))


@pytest.fixture(scope="module")
def live(app: Starlette) -> Iterator[tuple[str, LiveServer]]:
    server = LiveServer(app)
    with server as address:
        yield address, server


def _post(url: str, query: str, timeout: float) -> dict[str, Any]:
    response = httpx.post(f"{url}/graphql", json={"query": query}, timeout=timeout)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    return body


def test_cheap_queries_are_answered_while_the_worker_thread_is_busy(
    app: Starlette, live: tuple[str, LiveServer]
) -> None:
    """The test holds the server's one worker thread itself: an expensive query must wait
    for it, cheap ones must not. No timing ratio: the order of events is the assertion."""
    url, server = live
    expensive: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: expensive.update(_post(url, EXPENSIVE, 60)))
    with worker_thread_held(server, app):
        waiter.start()
        for number in range(5):  # would time out if they needed the held thread
            assert _post(url, cheap(number), timeout=10)["data"]["tags"]
        assert waiter.is_alive() and not expensive, "the expensive query did not wait"
    waiter.join(timeout=60)
    assert expensive["data"]["specs"]["totalCount"] > 0


def test_with_two_threads_an_expensive_query_does_not_wait_for_another(
    demo_index: Path,
) -> None:
    """One thread held (as by a slow query), the other answers the next expensive one."""
    app = create_app(Settings(index=demo_index, reload_interval=0, threads=2))
    server = LiveServer(app)
    with server as url, worker_thread_held(server, app):
        assert _post(url, EXPENSIVE, timeout=10)["data"]["specs"]["totalCount"] > 0


def test_a_page_of_specs_reads_each_package_once(demo_index: Path) -> None:
    store = IndexStore(demo_index)
    snapshot = store.snapshot()
    query = """{ specs(first: 100) { nodes { hash package { name numSpecs versions stacks }
                 p2: package { name compilers } } } }"""
    context = Context(store=store)
    result = build_schema().execute_sync(query, context_value=context)
    assert result.errors is None and result.data is not None
    names = {node["package"]["name"] for node in result.data["specs"]["nodes"]}
    # One package read per distinct package on the page, however many specs share it,
    # and one Package object per distinct package in the request.
    assert snapshot.packages_read == len(names)
    assert len([key for key in context.cache if key[0] == "package"]) == len(names)
    assert len(result.data["specs"]["nodes"]) == 100 and len(names) < 100
    store.close()


@pytest.mark.parametrize(
    ("query", "inline"),
    [
        ('{ spec(hash: "22xi27u") { hash package { name versions } } }', True),
        ("{ tags { name } stacks { name targets { value count } } }", True),
        ('{ package(name: "hdf5") { specs(first: 5) { totalCount } } }', False),
        ('{ stack(name: "e4s") { packages { totalCount } } }', False),
        ("query { ...F } fragment F on Query { specs { totalCount } }", False),
        ("{ tags { name ", False),
        ("{ " + "tags { name } " * 200 + "}", False),  # too long to parse on the loop
    ],
)
def test_only_queries_without_connections_run_on_the_event_loop(query: str, inline: bool) -> None:
    assert runs_inline(query) is inline
