"""A tag's nodes table and DAG written by a forked copy of the build, while the build
fills and writes the tag's binaries.

`TagGraph.fill` (the binaries into the tag's table) and `TagGraph.finish` (the edges,
and the nodes that are not binaries) read the same nodes and write nothing the other
reads; of the table, the DAG's files need only its row order. So where a copy is cheap
the build forks before `fill`: the copy finishes the graph, and writes the nodes table
and the DAG once the build sends it the rows, while the build fills and writes the
columns and the text: `finish` and the DAG run beside `fill` and the columns, and the
build waits for whichever is longer. On two cores a 200k-spec mirror's build took a
median 7.81 s instead of 8.75 s, five rounds in turn (docs/benchmarks/ingest-speed.md).

A copy shares the build's memory until either writes to it, and Python writes to every
object it reads (its reference count): the copy makes its own copy of each page of the
nodes and their edges as it finishes the graph. Only graphs of up to `MAX_FORKED_NODES`
nodes are forked; a larger graph, a build running other threads (helper_process.py), or
a system without `fork` is finished in the build itself, as before, and so is the graph
of a copy that ends without its files (killed, say). The copy's own peak memory is said
in the build's closing line.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import suppress
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import TracebackType
from typing import Any

from cachegql.index.disk.dagwrite import CycleError, write_dag
from cachegql.index.disk.layout import DAG_FOLDER, NODES_FOLDER
from cachegql.index.disk.text_write import EarlierText
from cachegql.index.disk.write import TagRows, TagWritten, tag_rows, write_tag, write_tag_folder
from cachegql.index.ingest import TagGraph, TagTable
from cachegql.index.ingest.dag_nodes import Edge
from cachegql.index.ingest.helper_process import (
    as_helper,
    helper_context,
    start_helper,
    stop_helper,
    stops_held,
)
from cachegql.index.peak_memory import own_peak_mb

__all__ = ["MAX_FORKED_NODES", "GraphWriter"]

MAX_FORKED_NODES = 400_000
"""The most nodes of a graph finished by a forked copy. Measured (2026-11-30, closing
lines): at 200k specs, the build 293 MB and its copy at most 340 MB of its own, against
400 MB for the build alone; at 1M, 1,268 MB and 1,610 MB, against 1,773 MB. Some 3 KB a
node together, against 1.8 KB alone: at 400k nodes 1.2 GB, below what a 1M build takes
alone; forked at 1M, 3 GB with the manifest reader, past the 2 GB of issue 19."""


class GraphWriter:
    """The nodes table and DAG of one tag, to be written into `folder` (which `start`
    makes) by a forked copy of the build: `start` is the ingest's `finish` (tag_graph.py),
    `write_tag_folder` then writes the tag's own files and waits for the copy's. Where
    no copy runs, or it ends without its files (killed, or failed: the build then meets
    the fault itself), the build finishes the graph and writes it, as write.py does. A
    context manager: leaving it ends a copy still running (the build failed or stopped)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.own_mb = 0
        """The copy's own peak memory, once it is done (0: none ran): see `own_peak_mb`."""
        self._graph: TagGraph | None = None
        self._process: BaseProcess | None = None
        self._pipe: Connection | None = None

    @property
    def pid(self) -> int | None:
        """The copy's process id while it runs (None: no copy)."""
        return None if self._process is None else self._process.pid

    def start(self, graph: TagGraph) -> Callable[[], list[Edge]]:
        """Fork the copy for `graph`, unless too large or no copy can run here; what
        gives the graph's dangling edges once its binaries are in the table."""
        context = helper_context()
        if len(graph.database.nodes) > MAX_FORKED_NODES or not isinstance(context, ForkContext):
            return graph.finish
        try:
            here, there = context.Pipe()
        except OSError:  # no descriptor left: the build finishes the graph
            return graph.finish
        self.folder.mkdir(parents=True)
        with stops_held(tracker=False):
            process = start_helper(context, _write_graph, (graph, self.folder, there))
            there.close()
            if process is None:  # no process here: the build finishes the graph
                here.close()
                self.folder.rmdir()
                return graph.finish
            self._process, self._pipe, self._graph = process, here, graph
        return self._dangling

    def _dangling(self) -> list[Edge]:
        """The edges the copy found to hashes no source knows, once it has finished; if
        it ended first, the build's own finish of the graph."""
        said = self._receive("dangling")
        if said is not None:
            return [Edge(*fields) for fields in said]
        graph = self._let_go()
        shutil.rmtree(self.folder)  # what the copy began: the tag is written here
        return graph.finish()

    def write_tag_folder(
        self, table: TagTable, graph: TagGraph | None, earlier_text: EarlierText | None = None
    ) -> TagWritten:
        """Write the tag: with a copy, its columns and text index beside the copy's nodes
        and DAG, raising `CycleError` as the copy found one; without, as write.py does."""
        if self._pipe is None:
            return write_tag_folder(table, graph, self.folder, earlier_text)
        rows = tag_rows(table)
        with suppress(OSError):  # the copy gone: seen once its files are asked for
            self._pipe.send((rows.hashes, rows.names))
        packages, text = write_tag(table, self.folder, rows, earlier_text=earlier_text)
        done = self._receive("done")
        if done is None:  # the copy ended without them: the graph is written here
            finished = self._let_go()
            finished.finish()  # its dangling edges were said by the copy
            for part in (NODES_FOLDER, DAG_FOLDER):
                shutil.rmtree(self.folder / part, ignore_errors=True)
            node_rows = _write_nodes(finished, self.folder)
            _write_dag(finished, self.folder, node_rows, rows.hashes, rows.names)
        else:
            self.own_mb = done
            self._let_go()  # before the build frees the nodes: their pages are its alone
        return TagWritten(packages, len(rows.hashes), text)

    def _receive(self, expected: str) -> Any:
        """What the copy says next (`expected`), or None if it ended first; raises the
        cycle it found."""
        assert self._pipe is not None
        try:
            kind, *said = self._pipe.recv()
        except (EOFError, OSError):  # OSError: a reset, the copy ended with words unread
            return None
        if kind == "cycle":
            raise CycleError(*said)
        assert kind == expected, (kind, expected)
        return said[0]

    def _let_go(self) -> TagGraph:
        """End the copy (ended already, or about to); the graph it was given."""
        graph = self._graph
        assert graph is not None
        self._stop()
        return graph

    def _stop(self) -> None:
        stop_helper(self._process, self._pipe)
        self._process, self._pipe, self._graph = None, None, None

    def __enter__(self) -> GraphWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()


def _write_nodes(graph: TagGraph, folder: Path) -> TagRows:
    """Write the table of a finished graph's nodes that are not binaries; its rows."""
    extras = graph.extras
    assert extras is not None, "the graph is finished"
    node_rows = tag_rows(extras)
    (folder / NODES_FOLDER).mkdir()
    write_tag(extras, folder / NODES_FOLDER, node_rows, text=False)
    return node_rows


def _write_dag(
    graph: TagGraph, folder: Path, node_rows: TagRows, spec_hashes: list[str], names: list[str]
) -> None:
    """Write a finished graph's DAG by the tag's rows: its binaries' (`spec_hashes`, with
    their package `names`) and its other nodes' (`node_rows`)."""
    write_dag(folder, graph.edges, spec_hashes, node_rows.hashes, [*names, *node_rows.names])


def _write_graph(graph: TagGraph, folder: Path, pipe: Connection) -> None:
    """In the forked copy: finish `graph`, send its dangling edges, write the nodes
    table and the DAG by the rows the build sends, and say done with its own peak
    memory, or the cycle it found. Anything else ends it without a word: the build
    gone, there is no one to tell; else the build writes the graph itself (and meets
    the same fault, with its own traceback, or gets past a copy's)."""
    try:
        as_helper(pipe)
        with suppress(OSError):  # out of memory, the kernel ends the copy first: the
            Path("/proc/self/oom_score_adj").write_text("1000")  # build gets past that
        dangling = graph.finish(drop=False)  # freeing them is the exit's
        pipe.send(("dangling", [(e.name, e.hash, e.deptypes, e.virtuals) for e in dangling]))
        # The rows first: the build's message outgrows the pipe's buffer, and it would
        # wait, its own writing not begun, for the nodes table to be written here.
        spec_hashes, names = pipe.recv()
        node_rows = _write_nodes(graph, folder)
        _write_dag(graph, folder, node_rows, spec_hashes, names)
        pipe.send(("done", own_peak_mb()))
    except CycleError as exc:
        with suppress(OSError):
            pipe.send(("cycle", str(exc), exc.nodes))
    except Exception:
        pass
