"""The build-cache queries of issue 19, timed in process on an existing index.

    python bench/serve_queries.py --index IX [--runs 200]

What `bench/run.py --only-mirror` asks after its build, without building: loads the index
as the server does (`IndexStore`, then the collector settled), answers each query `runs`
times with a fresh context, and prints one JSON line of medians and p99s (milliseconds)
with the load time and the resident memory after loading and after the queries.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from run import SMALL_FACETS, quantiles, settle
from serve_start import rss_mb

from cachegql.index import IndexStore
from cachegql.schema import Context, build_schema

FACETS = f"facets {{ {SMALL_FACETS} }}"
QUERIES = {
    "dependency_name": f'{{ specs(query: "^zlib", first: 20) {{ totalCount '
    f"nodes {{ hash name }} {FACETS} }} }}",
    "dependency_constrained": f'{{ specs(query: "^zlib@1.3.1", first: 20) {{ totalCount '
    f"nodes {{ hash name }} {FACETS} }} }}",
    "name_and_dependency": '{ specs(query: "hdf5 ^openmpi@5", first: 20) { totalCount '
    "nodes { hash name } } }",
    "dependents_of_zlib": '{ specs(query: "zlib", first: 1) { nodes { hash '
    "dependents(first: 20) { totalCount nodes { hash name } } } } }",
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)
    pid = os.getpid()
    started = time.perf_counter()
    store = IndexStore(args.index)
    report: dict[str, Any] = {"load_s": round(time.perf_counter() - started, 2)}
    settle()
    report["rss_loaded_mb"] = round(rss_mb(pid))
    schema = build_schema()
    for name, query in QUERIES.items():
        first = json.loads(schema.answer_sync(query, context=Context(store=store)).body or b"{}")
        if "errors" in first:
            raise RuntimeError(f"{name}: {first['errors']}")
        for _ in range(3):
            schema.answer_sync(query, context=Context(store=store))
        samples = []
        for _ in range(args.runs):
            t = time.perf_counter()
            schema.answer_sync(query, context=Context(store=store))
            samples.append(time.perf_counter() - t)
        report[name] = quantiles(samples)
        report[name]["answer"] = _total(first)
    report["rss_after_mb"] = round(rss_mb(pid))
    store.close()
    print(json.dumps(report))
    return 0


def _total(body: dict[str, Any]) -> Any:
    specs = body["data"]["specs"]
    if "totalCount" in specs:
        return specs["totalCount"]
    return specs["nodes"][0]["dependents"]["totalCount"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
