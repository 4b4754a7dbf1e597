"""An idle worker gives back the memory its queries freed (server/idle_memory.py)."""

from __future__ import annotations

import ctypes
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest

from cachegql.index import release_freed
from cachegql.server.admission import Admission
from cachegql.server.app import Settings, create_app
from cachegql.server.idle_memory import IDLE_SECONDS, IdleWatch, release_when_idle
from tests.conftest import LiveServer

IDLE = 0.05


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def _nothing(*_: object) -> None:
    return None


def _releases(looks: list[tuple[int, bool]]) -> list[int]:
    """The looks (requests arrived so far, busy) at which memory is given back."""
    watch = IdleWatch()
    return [n for n, (arrived, busy) in enumerate(looks) if watch.release_now(arrived, busy)]


def test_memory_is_given_back_once_after_requests_then_a_whole_idle_look() -> None:
    assert _releases([(0, False)] * 4) == []  # never served: nothing to give back
    assert _releases([(3, False)] * 4) == [1]  # served before the first look: once
    assert _releases([(0, False), (3, False), (3, False), (3, False)]) == [2]
    # idle, served again, idle again
    assert _releases([(3, False), (3, False), (5, False), (5, False)]) == [1, 3]


def test_a_busy_worker_keeps_its_memory() -> None:
    assert _releases([(n, False) for n in range(1, 9)]) == []  # requests at every look
    assert _releases([(1, True)] * 4) == []  # one long request, none new
    # the look after a long request ended is not yet a whole idle one
    assert _releases([(1, True), (1, True), (1, False), (1, False)]) == [3]


def test_the_watch_runs_until_cancelled() -> None:
    """The loop: the release runs in a thread, once per idle spell."""
    arrived = [0]
    released: list[int] = []

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(
                release_when_idle,
                lambda: arrived[0],
                lambda: False,
                IDLE,
                lambda: released.append(arrived[0]),
            )
            arrived[0] = 2
            await anyio.sleep(IDLE * 6)
            tasks.cancel_scope.cancel()

    anyio.run(main)
    assert released == [2]


def _freed_heap(mib: int) -> list[int]:
    """`mib` MiB of the C heap written, and freed but for one block in 16 (returned, to be
    freed): the live ones keep the freed ones from merging into the heap's top, which
    glibc would give back at once, so only a trim gives them back, as a query's
    temporaries among what the index keeps."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(64 * 1024) for _ in range(mib * 16)]
    for block in blocks:
        ctypes.memset(block, 1, 64 * 1024)
    for number, block in enumerate(blocks):
        if number % 16:
            libc.free(block)
    return blocks[::16]


def _free(blocks: list[int]) -> None:
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    for block in blocks:
        libc.free(block)


linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's malloc_trim: Linux"
)


@linux_only
def test_the_release_gives_freed_heap_back_to_the_system() -> None:
    blocks = _freed_heap(100)
    held = _rss_mb()
    release_freed()
    released = held - _rss_mb()
    _free(blocks)
    assert released > 50, f"gave back {released:.0f} MB of 100"


@linux_only
@pytest.mark.parametrize("max_requests", [64, 0])
def test_the_served_app_gives_memory_back_once_idle(pages_index: Path, max_requests: int) -> None:
    """The app's lifespan runs the watch, which sees every request (a POST in one pass, a
    GET through the stack), bounded or not: after them, within two seconds."""
    app = create_app(Settings(index=pages_index, reload_interval=0, max_requests=max_requests))
    query = "{ tags { name } }"
    with LiveServer(app) as url, httpx.Client(base_url=url) as client:
        assert client.post("/graphql", json={"query": query}).status_code == 200
        assert client.get("/graphql", params={"query": query}).status_code == 200
        assert app.state.admission.arrived == 2 and app.state.admission.in_progress == 0
        blocks = _freed_heap(100)
        held = _rss_mb()
        released = 0.0
        deadline = time.monotonic() + 3 * IDLE_SECONDS
        while released < 50 and time.monotonic() < deadline:
            time.sleep(0.05)
            released = held - _rss_mb()
        _free(blocks)
    assert released > 50, f"gave back {released:.0f} MB of 100 in {3 * IDLE_SECONDS} s"


def test_requests_in_progress_are_counted_without_a_bound_too() -> None:
    """With no bound (`--max-requests 0`) a long request still keeps the worker busy."""
    seen: list[int] = []
    admission = Admission(_nothing, 0)

    async def app(*_: object) -> None:
        seen.append(admission.in_progress)

    admission.app = app

    async def main() -> None:
        await admission({"type": "http"}, _nothing, _nothing)  # type: ignore[arg-type]

    anyio.run(main)
    assert seen == [1] and admission.in_progress == 0 and admission.arrived == 1
