"""The event loop stays free while an expensive query runs, and pages do not read per item."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cachegql.demo import DemoConfig, write_pages
from cachegql.index import IndexStore, build_index
from cachegql.schema import Context, build_schema
from cachegql.server.app import Settings, create_app
from cachegql.server.offload import runs_inline
from tests.conftest import LiveServer

CHEAP = "{ tags { name numSpecs } }"


def cheap(number: int) -> str:
    """A cheap query, different each time so that no response cache can answer it."""
    return f"{{ tags {{ name numSpecs }} t{number}: tags {{ name }} }}"


WORDS = ["build", "build system", "cmake", "python pip", "build shared"]


def slow_query(searches: int, salt: str) -> str:
    """Broad searches, ranked, with facets over the whole result: expensive on purpose.

    `salt` names the aliases, so that no two calls send the same body to a response cache.
    """
    return (
        "{ "
        + " ".join(
            f'{salt}{i}: specs(search: "{WORDS[i % len(WORDS)]}", first: 100) {{ totalCount '
            "facets { versions { value count } packages { value count } } nodes { hash } }"
            for i in range(searches)
        )
        + " }"
    )


@pytest.fixture(scope="module")
def big_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("big")
    write_pages(DemoConfig(packages=1500, specs=150_000, seed=5), root / "pages")
    build_index([root / "pages"], root / "ix")
    return root / "ix"


@pytest.fixture(scope="module")
def url(big_index: Path) -> Iterator[str]:
    with LiveServer(create_app(Settings(index=big_index, reload_interval=0))) as address:
        yield address


def _post(client: httpx.Client, query: str) -> float:
    started = time.perf_counter()
    response = client.post("/graphql", json={"query": query})
    assert response.status_code == 200 and "errors" not in response.json(), response.text
    return time.perf_counter() - started


def test_a_slow_search_does_not_delay_a_cheap_query(url: str) -> None:
    # Make the slow query slow on this machine, however fast it is: at least a second alone.
    searches = 40
    with httpx.Client(base_url=url, timeout=120) as client:
        while _post(client, slow_query(searches, f"c{searches}_")) < 1.0 and searches < 640:
            searches *= 2
    slow: dict[str, float] = {}

    def run_slow() -> None:
        with httpx.Client(base_url=url, timeout=120) as client:
            slow["started"] = time.perf_counter()
            slow["seconds"] = _post(client, slow_query(searches, "s"))
            slow["ended"] = time.perf_counter()

    with httpx.Client(base_url=url, timeout=60) as client:
        _post(client, CHEAP)
        worker = threading.Thread(target=run_slow)
        worker.start()
        time.sleep(0.1)  # let the slow query get going
        cheap_seconds = [_post(client, cheap(n)) for n in range(5)]
        cheap_done = time.perf_counter()
        worker.join()

    assert slow["seconds"] > 0.5, f"the slow query took only {slow['seconds']:.3f} s: not slow"
    assert cheap_done < slow["ended"], "the cheap queries waited for the slow one"
    assert max(cheap_seconds) < slow["seconds"] / 5, (cheap_seconds, slow["seconds"])


def test_a_page_of_specs_reads_each_package_once(big_index: Path) -> None:
    store = IndexStore(big_index)
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
    ],
)
def test_only_queries_without_connections_run_on_the_event_loop(query: str, inline: bool) -> None:
    assert runs_inline(query) is inline
