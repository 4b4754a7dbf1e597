"""A tag's graph finished and written by a forked copy of the build
(index/disk/graph_writer.py): the same files and problems as the build alone gives, the
copy's memory in the closing line, and no copy left behind when the build stops."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
import subprocess
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index import BuildReport, StrictModeError, build_index
from cachegql.index.disk import graph_writer
from cachegql.index.disk.graph_writer import GraphWriter
from cachegql.index.ingest import Ingested, Opener, caches_by_tag, ingest_caches, plan_sources
from cachegql.index.ingest.dag_nodes import Edge
from cachegql.index.ingest.tag_graph import TagGraph
from cachegql.index.peak_memory import own_peak_mb
from tests.conftest import CLI, PAGES
from tests.test_buildcache import looped_index, write

TAG = "develop"
T = TypeVar("T")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A v3 mirror of ten stacks whose index lacks five dependencies (dangling edges)."""
    folder = tmp_path_factory.mktemp("mirror")
    write_mirror(MirrorConfig(specs=2000, packages=80, dangling=5), folder)
    return folder / "mirror"


def _files(out: Path) -> dict[str, Any]:
    """Each file of the build at `out` with its size and checksum, but the text index's
    (whoosh names its segments at random: two builds alone differ there too)."""
    files: dict[str, Any] = json.loads((out / "manifest.json").read_text())["files"]
    return {name: entry for name, entry in files.items() if "/text/" not in name}


def _build(mirror: Path, out: Path, **options: Any) -> BuildReport:
    return build_index([mirror], out, tag=TAG, full=True, **options)


def test_a_forked_copy_writes_what_the_build_alone_does(
    mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cachegql index`, which runs no other thread, forks; the build alone is this
    process's, told not to (a test suite's process may run threads: it would not fork)."""
    forked = tmp_path / "forked"
    command = [CLI, "index", str(mirror), "--tag", TAG, "--out", str(forked), "--full"]
    closing = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert re.search(r"\d+ MB of its own in a graph writer\) -> ", closing), closing
    monkeypatch.setattr(graph_writer, "MAX_FORKED_NODES", 0)
    alone = _build(mirror, tmp_path / "alone")
    assert alone.writer_mb == 0 and "graph writer" not in alone.summary()
    assert _files(forked) == _files(tmp_path / "alone")
    assert any(name.startswith("tags/0/dag/") for name in _files(forked))
    assert any(name.startswith("tags/0/nodes/") for name in _files(forked))
    problems = json.loads((forked / "manifest.json").read_text())["problems"]
    assert problems == [str(p) for p in alone.problems]
    assert any("5 dependencies are not in any index" in p for p in problems)


def _in_fresh_process(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` in a fresh interpreter, which runs no other thread, so that a
    build there forks its graph writer (a test suite's process may run a thread some
    test before left: a build there never forks)."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        return pool.submit(function, *args).result()


def _finishes_counted() -> list[TagGraph]:
    """The graphs this process finishes from now on (a forked copy's are its own)."""
    finished: list[TagGraph] = []
    finish = TagGraph.finish

    def counted(graph: TagGraph, *, drop: bool = True) -> list[Edge]:
        finished.append(graph)
        return finish(graph, drop=drop)

    TagGraph.finish = counted  # type: ignore[method-assign, assignment]
    return finished


def _built(
    sources: list[Path], out: Path, tag: str, max_nodes: int
) -> tuple[dict[str, Any], list[str], dict[str, int], int]:
    """A build with graphs of up to `max_nodes` nodes forked: its files, problems and
    tags, and the graphs it finished itself (not its copies)."""
    graph_writer.MAX_FORKED_NODES = max_nodes
    finished = _finishes_counted()
    report = build_index(sources, out, tag=tag, full=True)
    return _files(out), [str(p) for p in report.problems], report.tags, len(finished)


def test_a_graph_over_the_limit_is_finished_by_the_build(
    mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A graph one node over the limit is not forked; one at it is."""
    monkeypatch.setattr(graph_writer, "MAX_FORKED_NODES", 0)
    _build(mirror, tmp_path / "probe")
    written = json.loads((tmp_path / "probe" / "tags/0/dag/dag.json").read_text())["nodes"]
    nodes = written - 5  # the graph's own: its five dangling edges' nodes come after
    over = _in_fresh_process(_built, [mirror], tmp_path / "over", TAG, nodes - 1)
    at = _in_fresh_process(_built, [mirror], tmp_path / "at", TAG, nodes)
    assert over[3] == 1 and at[3] == 0  # the graphs the build finished itself
    assert over[:3] == at[:3]


def test_a_tag_of_pages_and_a_build_cache_is_written_alike(mirror: Path, tmp_path: Path) -> None:
    """The table holds the pages' specs before the binaries are added: the rows the DAG
    is written by are the table's, pages' and binaries' alike."""
    sources = [PAGES, mirror]
    forked = _in_fresh_process(_built, sources, tmp_path / "forked", TAG, 10**9)
    alone = _in_fresh_process(_built, sources, tmp_path / "alone", TAG, 0)
    assert forked[3] == 0 and alone[3] == 1
    assert forked[:3] == alone[:3]
    assert forked[2][TAG] > 2000  # the pages' specs of the tag and the mirror's binaries


def test_a_cycle_found_by_the_copy_leaves_the_tag_out_as_the_build_does(tmp_path: Path) -> None:
    sources = [PAGES, write(tmp_path / "index.json", looped_index())]
    forked = _in_fresh_process(_built, sources, tmp_path / "forked", "a-looped", 10**9)
    alone = _in_fresh_process(_built, sources, tmp_path / "alone", "a-looped", 0)
    assert forked[3] == 0 and alone[3] == 1  # the copy found the cycle
    assert forked[:3] == alone[:3]
    assert "a-looped" not in forked[2]
    assert any("its dependencies form a cycle, through 2 nodes" in p for p in forked[1])
    # Its folder is the first by name, removed: the pages' tags are in the others.
    assert not any(name.startswith("tags/0/") for name in forked[0])
    assert any(name.startswith("tags/1/") for name in forked[0])


def _strict_stop(mirror: Path, out: Path) -> tuple[str, list[int | None], int]:
    """The strict build's error, its copies, and the processes it left running."""
    copies: list[int | None] = []
    start = GraphWriter.start

    def recorded(writer: GraphWriter, graph: TagGraph) -> Callable[[], list[Edge]]:
        finished = start(writer, graph)
        copies.append(writer.pid)
        return finished

    GraphWriter.start = recorded  # type: ignore[method-assign, assignment]
    with pytest.raises(StrictModeError) as stopped:
        _build(mirror, out, strict=True)
    return str(stopped.value), copies, len(multiprocessing.active_children())


def test_a_strict_build_stopped_by_a_problem_ends_its_copy(mirror: Path, tmp_path: Path) -> None:
    """The dangling edges, said by the copy, stop a strict build while the copy waits
    for the rows: it is ended with the build, which publishes nothing."""
    error, copies, left = _in_fresh_process(_strict_stop, mirror, tmp_path / "strict")
    assert "5 dependencies are not in any index" in error
    assert len(copies) == 1 and copies[0] is not None
    assert left == 0
    assert not (tmp_path / "strict" / "manifest.json").exists()


def _exit_at_once(pipe: object) -> None:
    os._exit(1)


def _killed_copy(mirror: Path, folder: Path, when: str) -> tuple[dict[str, bytes], int, int, int]:
    """The tag written with its graph writer ended `when`: `started` (it exits first
    thing), or `finished` (killed once it has said the dangling edges). The files
    written but the text index's, the dangling edges' problems, the graphs the build
    finished itself, and the processes left running."""
    opener = Opener()
    requests = caches_by_tag(plan_sources([mirror], opener=opener, tag=TAG))[TAG]
    writer = GraphWriter(folder)
    finished_here = _finishes_counted()
    if when == "started":
        graph_writer.as_helper = _exit_at_once  # type: ignore[attr-defined, assignment]

    def start_then_kill(graph: TagGraph) -> Callable[[], list[Edge]]:
        finished = writer.start(graph)
        assert writer.pid is not None, "no copy started"
        pid = writer.pid
        if when == "started":
            return finished

        def then_kill() -> list[Edge]:
            dangling = finished()
            os.kill(pid, signal.SIGKILL)
            return dangling

        return then_kill

    result = Ingested()
    with writer:
        ingest_caches(TAG, requests, result, opener=opener, finish=start_then_kill)
        writer.write_tag_folder(result.tables[TAG], result.graphs[TAG])
    written = {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in folder.rglob("*")
        if path.is_file() and "text" not in path.relative_to(folder).parts
    }
    problems = [p.message for p in result.problems if "not in any index" in p.message]
    return written, len(problems), len(finished_here), len(multiprocessing.active_children())


@pytest.mark.parametrize("when", ["started", "finished"])
def test_a_copy_that_dies_leaves_its_work_to_the_build(
    mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """A copy that ends (killed by the kernel, out of memory, say) before it said its
    dangling edges, or after, leaves the build to write the graph itself: the same
    files."""
    written, dangling, finished, left = _in_fresh_process(
        _killed_copy, mirror, tmp_path / "tag", when
    )
    assert finished == 1  # the build finished the graph itself
    monkeypatch.setattr(graph_writer, "MAX_FORKED_NODES", 0)
    _build(mirror, tmp_path / "alone")
    alone = tmp_path / "alone" / "tags" / "0"
    assert written == {
        path.relative_to(alone).as_posix(): path.read_bytes()
        for path in alone.rglob("*")
        if path.is_file() and "text" not in path.relative_to(alone).parts
    }
    assert dangling == 1 and left == 0


def _own_peak_of_a_copy(shared_mb: int, written_mb: int) -> int:
    """`own_peak_mb` in a copy forked from a process holding `shared_mb` MB, which
    reads all of it and writes `written_mb` MB of its own."""
    shared = bytearray(shared_mb << 20)
    shared[::4096] = b"\1" * len(range(0, len(shared), 4096))  # resident before the fork
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:
        read = sum(shared[::4096])
        own = bytearray(written_mb << 20)
        own[::4096] = b"\1" * len(range(0, len(own), 4096))
        os.write(writing, f"{own_peak_mb()} {read}".encode())
        os._exit(0)
    os.close(writing)
    said = os.read(reading, 64).decode()
    os.waitpid(pid, 0)
    return int(said.split()[0])


def test_a_copys_own_peak_is_what_it_wrote_not_what_it_shares() -> None:
    """Read, the 200 MB the copy shares with the process it was forked from are not its
    own; the 40 MB it wrote are (and the few of the interpreter's it touched)."""
    own = _in_fresh_process(_own_peak_of_a_copy, 200, 40)
    assert 40 <= own <= 40 + 30
