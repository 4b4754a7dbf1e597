"""A tag's nodes table and DAG written by a forked copy of the build, while the build
fills and writes the tag's binaries.

`TagGraph.fill` (the binaries into the tag's table) and `TagGraph.finish` (the edges,
and the nodes that are not binaries) read the same nodes and write nothing the other
reads; of the table, the DAG's files need only its row order. So where a copy is cheap
the build forks before `fill`: the copy finishes the graph, writes the nodes table, and
writes the DAG once the build sends it the rows, while the build fills and writes the
columns and the text. On two cores, a 200k-spec mirror's build then waits for neither
`finish` nor the DAG (0.6 s each of its 7.4 s: docs/benchmarks/ingest-speed.md).

A copy shares the build's memory until either writes to it, and Python writes to every
object it reads (its reference count): the copy makes its own copy of each page of the
nodes and their edges as it finishes the graph. Only graphs of up to `MAX_FORKED_NODES`
nodes are forked, to keep the build within 2 GB (issue 19); a larger graph, a build
running other threads (helper_process.py), or a system without `fork` is finished in the
build itself, as before. The copy's own memory (the pages that are its alone) is said in
the build's closing line.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import TracebackType
from typing import Any

from cachegql.index.disk.dagwrite import CycleError, write_dag
from cachegql.index.disk.layout import NODES_FOLDER
from cachegql.index.disk.text_write import EarlierText
from cachegql.index.disk.write import TagWritten, tag_rows, write_tag, write_tag_folder
from cachegql.index.ingest import TagGraph, TagTable
from cachegql.index.ingest.dag_nodes import Edge
from cachegql.index.ingest.helper_process import (
    as_helper,
    helper_context,
    start_helper,
    stop_helper,
    stops_held,
)
from cachegql.index.peak_memory import private_mb

__all__ = ["MAX_FORKED_NODES", "GraphWriter"]

MAX_FORKED_NODES = 500_000
"""The most nodes of a graph finished by a forked copy. A copy's own memory is 1.1 KB a
node (230 MB at 200k specs, 1,044 MB at 1M), beside the build's 1.25 KB (292 MB, 1,245
MB), against 1.8 KB a node for the build alone (400 MB, 1,773 MB): forked at 1M, the
build would take 2.5 GB with its manifest reader, past the 2 GB of issue 19; at 500k
nodes, some 1.3 GB."""


class GraphWriter:
    """The nodes table and DAG of one tag, to be written into `folder` (which `start`
    makes) by a forked copy of the build: `start` is the ingest's `finish` (tag_graph.py),
    `write_tag_folder` then writes the tag's own files and waits for the copy's (or, if
    no copy runs, the graph finished in the build, all of the tag as write.py does). A
    context manager: leaving it ends a copy still running (the build failed or stopped)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.private_mb = 0
        """The copy's own memory at its largest sample, once it is done (0: none ran)."""
        self._process: BaseProcess | None = None
        self._pipe: Connection | None = None

    @property
    def pid(self) -> int | None:
        """The copy's process id while it runs (None: no copy)."""
        return None if self._process is None else self._process.pid

    def start(self, graph: TagGraph) -> Callable[[], list[Edge]]:
        context = helper_context()
        if len(graph.database.nodes) > MAX_FORKED_NODES or not isinstance(context, ForkContext):
            return graph.finish
        self.folder.mkdir(parents=True)
        here, there = context.Pipe()
        with stops_held(tracker=False):
            self._process = start_helper(context, _write_graph, (graph, self.folder, there))
            there.close()
            if self._process is None:  # no process here: the build finishes the graph
                here.close()
                self.folder.rmdir()
                return graph.finish
            self._pipe = here
        return self._dangling

    def _dangling(self) -> list[Edge]:
        """The edges the copy found to hashes no source knows, once it has finished."""
        return [Edge(*fields) for fields in self._receive("dangling")]

    def write_tag_folder(
        self, table: TagTable, graph: TagGraph | None, earlier_text: EarlierText | None = None
    ) -> TagWritten:
        """Write the tag: with a copy, its columns and text index beside the copy's nodes
        and DAG, raising `CycleError` as the copy found one; without, as write.py does."""
        if self._pipe is None:
            return write_tag_folder(table, graph, self.folder, earlier_text)
        rows = tag_rows(table)
        self._pipe.send((rows.hashes, rows.names))
        packages, text = write_tag(table, self.folder, rows, earlier_text=earlier_text)
        self.private_mb = self._receive("done")
        return TagWritten(packages, len(rows.hashes), text)

    def _receive(self, expected: str) -> Any:
        assert self._pipe is not None and self._process is not None
        try:
            kind, *said = self._pipe.recv()
        except (EOFError, OSError):
            self._process.join()
            raise RuntimeError(
                f"the graph writer of {self.folder} ended early (exit status "
                f"{self._process.exitcode})"
            ) from None
        if kind == "cycle":
            raise CycleError(*said)
        if kind == "failed":
            raise RuntimeError(f"the graph writer of {self.folder} failed:\n{said[0]}")
        assert kind == expected, (kind, expected)
        return said[0]

    def __enter__(self) -> GraphWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stop_helper(self._process, self._pipe)
        self._process, self._pipe = None, None


def _write_graph(graph: TagGraph, folder: Path, pipe: Connection) -> None:
    """In the forked copy: finish `graph`, send its dangling edges, write the nodes
    table, write the DAG by the rows the build sends, and say done with its own memory
    (or the cycle, or what failed). The build gone, it stops."""
    as_helper(pipe)
    sampled = 0
    try:
        dangling = graph.finish(drop=False)  # freeing them is the exit's
        pipe.send(("dangling", [(e.name, e.hash, e.deptypes, e.virtuals) for e in dangling]))
        extras = graph.extras
        assert extras is not None
        sampled = private_mb()
        node_rows = tag_rows(extras)
        (folder / NODES_FOLDER).mkdir()
        write_tag(extras, folder / NODES_FOLDER, node_rows, text=False)
        spec_hashes, names = pipe.recv()
        sampled = max(sampled, private_mb())
        names += node_rows.names
        write_dag(folder, graph.edges, spec_hashes, node_rows.hashes, names)
        pipe.send(("done", max(sampled, private_mb())))
    except (EOFError, BrokenPipeError):  # the build is gone
        return
    except CycleError as exc:
        pipe.send(("cycle", str(exc), exc.nodes))
    except Exception:  # told to the build, which raises it
        pipe.send(("failed", traceback.format_exc()))
