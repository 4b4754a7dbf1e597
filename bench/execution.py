"""The same queries in process through each execution: graphql-core's (with the fast
path for plain fields) and compiled plans (`schema/compiled.py`).

    .venv/bin/python bench/execution.py --index bench/work/index-hostile-200000-v5 [QUERY...]

Uses `bench/run.py`'s queries and timing (each query at least 50 runs and 1 s); prints the
median and p99 of each query under each execution, and how many operations plans answered.
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import cachegql_queries, choose_parameters, quantiles, timed

from cachegql.index import IndexStore
from cachegql.schema import Context, build_schema
from cachegql.schema.compiled import STATS, CompiledExecutionContext
from cachegql.schema.execution import FastExecutionContext


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("queries", nargs="*", help="names from bench/run.py (default: all)")
    args = parser.parse_args(argv)
    store = IndexStore(args.index)
    gc.collect()
    gc.freeze()
    queries = cachegql_queries(choose_parameters(store))
    for label, execution in (
        ("fast", FastExecutionContext),
        ("compiled", CompiledExecutionContext),
    ):
        schema = build_schema(execution=execution)
        for name in args.queries or list(queries):
            query = queries[name]

            def run(query: str = query, schema: Any = schema) -> None:
                schema.execute_sync(query, context_value=Context(store=store))

            numbers = quantiles(timed(run, min_runs=50, min_seconds=1.0))
            print(
                f"{label:9} {name:24} median {numbers['median_ms']:7.3f} ms, "
                f"p99 {numbers['p99_ms']:7.3f} ms ({numbers['runs']} runs)",
                flush=True,
            )
    print(f"operations by plan: {dict(STATS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
