"""Wall time of each stage of one `cachegql index` run, in this process.

    .venv/bin/python bench/build_stages.py index MIRROR --tag develop --out DIR -q

Runs the CLI with the arguments given, each stage's function wrapped in a timer, and
prints the seconds spent in each (stages nest: `_read_v3` holds `_read_records` and the
wait for the manifest reader, `sizes.result`; `_add_graph` holds `finish`;
`write_tag_folder` holds `write_tag` and `write_text_index`, and `write_dag`, which runs
in a thread beside them: their sum exceeds it), then the CPU time of the build's process
and of its helpers. A graph of up to 400k nodes is finished, and its nodes table and DAG
written, by a forked graph writer (index/disk/graph_writer.py): `finish`, `write_dag` and
the nodes' `write_tag` are then not timed, `_add_graph` and `write_tag_folder` hold the
waits for the writer, and the helpers' CPU holds the writer's. A stage is
a whole function, so the timers cost nothing per spec; what a stage's own time is made
of is cProfile's business (docs/benchmarks/ingest-speed.md).
"""

from __future__ import annotations

import functools
import gc
import importlib
import resource
import sys
import time
from collections import defaultdict
from typing import Any

SECONDS: defaultdict[str, float] = defaultdict(float)
STAGES = (  # module, attribute path, label
    ("cachegql.index.build", "take_stock", "take_stock"),
    ("cachegql.index.build", "tag_fingerprint", "tag_fingerprint"),
    ("cachegql.index.disk.graph_writer", "GraphWriter.write_tag_folder", "write_tag_folder"),
    ("cachegql.index.ingest.buildcache", "_read_v3", "_read_v3"),
    ("cachegql.index.ingest.spackdb", "_read_records", "_read_records"),
    ("cachegql.index.ingest.tarball_sizes", "PendingSizes.result", "sizes.result"),
    ("cachegql.index.ingest.tag_graph", "TagGraph.add", "graph.add"),
    ("cachegql.index.ingest.ingest", "_add_graph", "_add_graph"),
    ("cachegql.index.ingest.tag_graph", "TagGraph.finish", "finish"),
    ("cachegql.index.disk.write", "write_tag", "write_tag"),
    ("cachegql.index.disk.graph_writer", "write_tag", "write_tag"),
    ("cachegql.index.disk.text_write", "write_text_index", "write_text_index"),
    ("cachegql.index.disk.write", "write_dag", "write_dag"),
    ("cachegql.index.ingest.edge_arrays", "EdgeArrays.dangling", "dangling"),
)


def _timed(owner: Any, name: str, label: str) -> None:
    function = getattr(owner, name)

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - started

    setattr(owner, name, timed)


def main() -> None:
    for module, path, label in STAGES:
        owner: Any = importlib.import_module(module)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        _timed(owner, name, label)
    _timed(gc, "collect", "gc.collect")
    from cachegql.server.cli import main as cli

    started = time.perf_counter()
    code: int | str | None = 0
    try:
        code = cli(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    print(f"{'total':20s} {time.perf_counter() - started:7.2f} s")
    for label, seconds in SECONDS.items():
        print(f"{label:20s} {seconds:7.2f} s")
    # The build's own CPU, and its helpers' (the manifest reader, the graph writer): on two
    # cores they slow each other, so a stage's wall time moves with what the others do.
    for label, who in (
        ("cpu, build", resource.RUSAGE_SELF),
        ("cpu, helpers", resource.RUSAGE_CHILDREN),
    ):
        usage = resource.getrusage(who)
        print(f"{label:20s} {usage.ru_utime + usage.ru_stime:7.2f} s")
    sys.exit(code)  # a failed build fails here too


if __name__ == "__main__":  # the manifest reader is spawned: it imports this file again
    main()
