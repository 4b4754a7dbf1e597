"""An idle worker gives back the memory its queries freed (server/idle_memory.py)."""

from __future__ import annotations

import ctypes
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest

from cachegql.server.admission import Admission
from cachegql.server.app import Settings, create_app
from cachegql.server.idle_memory import IDLE_SECONDS, release_when_idle
from tests.conftest import LiveServer

IDLE = 0.05


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def _nothing(*_: object) -> None:
    return None


def _released(admit: list[int], ticks: int = 8) -> list[int]:
    """The admission count at each release, while `admit[i]` requests come at tick i."""
    admission = Admission(_nothing, 8)
    released: list[int] = []

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(
                release_when_idle, admission, IDLE, lambda: released.append(admission.admitted)
            )
            for tick in range(ticks):
                admission.admitted += admit[tick] if tick < len(admit) else 0
                await anyio.sleep(IDLE)
            tasks.cancel_scope.cancel()

    anyio.run(main)
    return released


def test_memory_is_given_back_once_after_requests_then_a_whole_idle_spell() -> None:
    assert _released([]) == []  # never served: nothing to give back
    assert _released([3]) == [3]  # served, then idle: once, not again while idle
    assert _released([3, 0, 0, 0, 2]) == [3, 5]  # idle, served again, idle again


def test_a_busy_worker_keeps_its_memory() -> None:
    assert _released([1] * 8, ticks=8) == []
    admission = Admission(_nothing, 8)
    admission.admitted, admission.in_progress = 1, 1  # one long request, none new
    released: list[int] = []

    async def main() -> None:
        with anyio.move_on_after(IDLE * 6):
            await release_when_idle(admission, IDLE, lambda: released.append(1))

    anyio.run(main)
    assert released == []


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
    top = _freed_heap(100)
    held = _rss_mb()
    admission = Admission(_nothing, 8)
    admission.admitted = 1

    async def main() -> None:
        with anyio.move_on_after(IDLE * 4):
            await release_when_idle(admission, IDLE)

    anyio.run(main)
    released = held - _rss_mb()
    _free(top)
    assert released > 50, f"gave back {released:.0f} MB of 100"


@linux_only
def test_the_served_app_gives_memory_back_once_idle(pages_index: Path) -> None:
    """The app's lifespan runs the release: after its requests, within two seconds."""
    app = create_app(Settings(index=pages_index, reload_interval=0))
    with LiveServer(app) as url, httpx.Client(base_url=url) as client:
        for _ in range(3):
            assert client.post("/graphql", json={"query": "{ tags { name } }"}).status_code == 200
        assert app.state.admission.admitted == 3
        top = _freed_heap(100)
        held = _rss_mb()
        released = 0.0
        deadline = time.monotonic() + 3 * IDLE_SECONDS
        while released < 50 and time.monotonic() < deadline:
            time.sleep(0.05)
            released = held - _rss_mb()
        _free(top)
    assert released > 50, f"gave back {released:.0f} MB of 100 in {3 * IDLE_SECONDS} s"
