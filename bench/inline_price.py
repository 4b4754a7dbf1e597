"""Does the cost model's price tell how long an operation runs? Price and time, side by side.

    .venv/bin/python bench/inline_price.py --index bench/work/index-pages-1000000-8000-seed1

For each query of the benchmark (`run.py`) and a few worst cases of the same shape, prints
its price (`cachegql.schema.limits.price`, computed before it runs), whether the runner
runs it inline today (`offload.runs_inline`), and its median time in process (the
server's own `answer_sync`, compiled plans where they apply). An operation could run on
the event loop by its price only if every operation of that price or less runs within a
few milliseconds: the table shows where that holds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

from graphql import FragmentDefinitionNode, OperationDefinitionNode, parse

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling modules

from run import ALL_FACETS, cachegql_queries, choose_parameters  # type: ignore[import-not-found]

WORST = {
    # No filter: every spec of the tag counted into every facet.
    "all_specs_facets": f"{{ specs(first: 0) {{ totalCount facets {{ {ALL_FACETS} }} }} }}",
    "all_specs_count": "{ specs(first: 1) { totalCount nodes { hash } } }",
    "search_one_letter": '{ packages(search: "p", first: 20) { totalCount nodes { name } } }',
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from cachegql.index import IndexStore, size_bounds
    from cachegql.schema import Context, build_schema
    from cachegql.schema.limits import price
    from cachegql.server.holder import settle
    from cachegql.server.offload import runs_inline

    store = IndexStore(args.index)
    settle()
    schema = build_schema()
    queries = {**cachegql_queries(choose_parameters(store)), **WORST}
    bounds = size_bounds(store)
    rows = []
    for name, query in queries.items():
        document = parse(query)
        operation = next(d for d in document.definitions if isinstance(d, OperationDefinitionNode))
        fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        cost = price(schema._schema, operation, fragments, {}, bounds).cost
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            schema.answer_sync(query, context=Context(store=store))
            times.append(time.perf_counter() - started)
        rows.append((cost, name, runs_inline(query), statistics.median(times) * 1000))
    print("| query | price | inline today | median ms |")
    print("|---|---|---|---|")
    for cost, name, inline, ms in sorted(rows):
        print(f"| {name} | {cost:,} | {'yes' if inline else 'no'} | {ms:.2f} |")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
