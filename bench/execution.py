"""The same queries in process through each execution, from query text to JSON bytes:
strawberry and graphql-core (with the fast path for plain fields), and compiled plans
written straight to JSON (`schema/direct.py`), as the server runs them.

    .venv/bin/python bench/execution.py --index bench/work/index-hostile-200000-v5 [QUERY...]

Uses `bench/run.py`'s queries and timing (each query at least 50 runs and 1 s); prints the
median and p99 of each query under each execution, how many operations plans answered,
and what preparing a new document (parse, price, validate, plan) costs.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from run import cachegql_queries, choose_parameters, quantiles, settle, timed

from cachegql.index import IndexStore
from cachegql.schema import COMPILED_STATS, CachegqlSchema, Context, build_schema


def as_json(schema: CachegqlSchema, query: str, store: IndexStore) -> bytes:
    """The answer's bytes, as the server writes them."""
    answer = schema.answer_sync(query, context=Context(store=store))
    if answer.body is not None:
        return answer.body
    assert answer.result is not None
    return orjson.dumps({"data": answer.result.data})


def preparation(schema: CachegqlSchema, queries: dict[str, str], store: IndexStore) -> None:
    """A new document's first answer less a prepared one's: parse, price, validate, plan."""
    numbers = itertools.count()
    for name, query in queries.items():

        def new(query: str = query) -> bytes:
            # New text each run (a comment), so that nothing is cached.
            return as_json(schema, f"{query} #{next(numbers)}", store)

        first = quantiles(timed(new))
        again = quantiles(timed(lambda q=query: as_json(schema, q, store)))
        print(
            f"preparing {name:22} median {first['median_ms'] - again['median_ms']:7.3f} ms "
            f"(new document {first['median_ms']:.3f} ms, prepared {again['median_ms']:.3f} ms)",
            flush=True,
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("queries", nargs="*", help="names from bench/run.py (default: all)")
    args = parser.parse_args(argv)
    store = IndexStore(args.index)
    settle()
    queries = cachegql_queries(choose_parameters(store))
    names = args.queries or list(queries)
    for label, compiled in (("graphql-core", False), ("compiled", True)):
        schema = build_schema(compiled=compiled)
        for name in names:
            query = queries[name]

            def run(query: str = query, schema: Any = schema) -> None:
                as_json(schema, query, store)

            numbers = quantiles(timed(run, min_runs=50, min_seconds=1.0))
            print(
                f"{label:12} {name:22} median {numbers['median_ms']:7.3f} ms, "
                f"p99 {numbers['p99_ms']:7.3f} ms ({numbers['runs']} runs)",
                flush=True,
            )
    print(f"executions: {dict(COMPILED_STATS)}")
    preparation(build_schema(), {name: queries[name] for name in names}, store)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
