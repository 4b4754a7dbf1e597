"""An index's records read into nodes two ways, in one process: parsed by orjson and read by
`read_node` (how a build read them until stop 52), and read from their text by `read_record`.

    .venv/bin/python bench/record_reading.py INDEX_BLOB [--records N] [--rounds 3]

INDEX_BLOB is a build cache's `index.json` (a v3 mirror's largest blob: `cachegql
demo-data --mirror --specs 1000000` writes a 1.8 GB one). The first N records (all by
default) are cut out of it once, by the build's own compact scan, then each way reads them
all with a fresh memo, in turn for each round, the cycle collector paused as in a build;
prints the microseconds a record of each way (the least, and each round's) and checks that
both give the same nodes.
"""

from __future__ import annotations

import argparse
import gc
import mmap
import sys
import time
from pathlib import Path

import orjson

from cachegql.index.ingest.dag_nodes import Node
from cachegql.index.ingest.node_reader import NodeMemo, read_node, read_record
from cachegql.index.ingest.spackdb import _records


def records(path: Path, limit: int | None) -> list[tuple[str, bytes]]:
    """The records' texts as a build's compact scan hands them to `_read_records`."""
    with path.open("rb") as file:
        data = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    found = []
    for digest, text, _ in _records(data, str(path), "compact")[1]:
        assert isinstance(text, bytes), f"{path}: not read record by record"
        found.append((digest, text))
        if limit is not None and len(found) >= limit:
            break
    return found


def parsed(texts: list[tuple[str, bytes]]) -> list[Node]:
    memo = NodeMemo()
    nodes = []
    for digest, text in texts:
        record = orjson.loads(text)
        nodes.append(read_node(record["spec"], digest, bool(record.get("in_buildcache")), memo))
    return nodes


def from_text(texts: list[tuple[str, bytes]]) -> list[Node]:
    memo = NodeMemo()
    nodes = []
    for digest, text in texts:
        node = read_record(text, digest, memo)
        assert node is not None, f"record {digest} is of another shape: left to read_node"
        nodes.append(node)
    return nodes


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("index_blob", type=Path)
    parser.add_argument("--records", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    texts = records(args.index_blob, args.records)
    size = sum(len(text) for _, text in texts) / len(texts)
    print(f"{len(texts):,} records of {size:,.0f} bytes on average")
    gc.disable()
    ways = (parsed, from_text)
    seconds: dict[str, list[float]] = {way.__name__: [] for way in ways}
    for _ in range(args.rounds):  # alternating: this machine's speed moves over minutes
        for way in ways:
            started = time.perf_counter()
            nodes = way(texts)
            seconds[way.__name__].append(time.perf_counter() - started)
            del nodes
    results = {name: min(times) / len(texts) * 1e6 for name, times in seconds.items()}
    for name, times in seconds.items():
        each = ", ".join(f"{t / len(texts) * 1e6:.2f}" for t in times)
        print(f"{name}: {results[name]:.2f} us a record at best ({each})")
    assert parsed(texts) == from_text(texts), "the two ways read different nodes"
    print(f"the same nodes; read from their text: {results['parsed'] / results['from_text']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
