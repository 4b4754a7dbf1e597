"""Does an operation's price, or the rows it reads, tell how long it runs? Side by side.

    .venv/bin/python bench/inline_price.py --index /work/data/index-pages-1m

For the queries of the benchmark (`run.py`), a few worst cases, a sweep of filtered
pages (one condition, or a package and one more; sizes from a few specs to the whole
tag; the benchmark's 7 facets or all 8 facets unbounded), and searches of packages and of
specs (words, prefixes, typos, up to 32 words): each one's price
(`cachegql.schema.limits.price`), the rows it reads (`cachegql.schema.inline.Reads`,
the index's estimate from its posting lists), both known before it runs, whether the
runner runs it inline (`inline.runs_inline`, or the short-document rule of
`offload.runs_inline`), and its median time in process (the server's own
`answer_sync`), and how long pricing and estimating it took (on the event loop, before
the runner chooses). Then, for thresholds of rows read, the slowest operation within the
price limit that would run inline: the threshold of `inline.INLINE_MAX_READS` is chosen
where that stays within a few milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling modules

from run import (  # type: ignore[import-not-found]
    ALL_FACETS,
    SMALL_FACETS,
    TOP_FACETS,
    cachegql_queries,
    choose_parameters,
)

WORST = {
    # No filter: every spec of the tag counted into every facet.
    "all_specs_facets": f"{{ specs(first: 0) {{ totalCount facets {{ {ALL_FACETS} }} }} }}",
    "all_specs_count": "{ specs(first: 1) { totalCount nodes { hash } } }",
    "search_one_letter": '{ packages(search: "p", first: 20) { totalCount nodes { name } } }',
}
FIELDS = ("target", "os", "compiler", "version", "package")
THRESHOLDS = (5_000, 10_000, 20_000, 30_000, 50_000, 75_000, 100_000, 200_000)


def page(condition: str, facets: str, first: int = 20) -> str:
    return (
        f"{{ specs(filter: {{ {condition} }}, first: {first}) {{ totalCount "
        f"nodes {{ hash name version }} facets {{ {facets} }} }} }}"
    )


def sweep(snapshot: Any, parameters: dict[str, str], limit: int) -> dict[str, str]:
    """Filtered pages whose matches range from a few specs to most of the tag."""
    import numpy as np

    queries: dict[str, str] = {}
    for facets_name, facets in (("7f", f"{SMALL_FACETS} {TOP_FACETS}"), ("8f", ALL_FACETS)):
        for field in FIELDS:
            column = snapshot.columns[field]
            sizes = column.postings.sizes()
            order = np.argsort(sizes)
            # About ten values per field, spread over its sizes (largest included).
            picks = sorted({int(order[int(i)]) for i in np.linspace(0, len(order) - 1, 10)})
            for value_id in picks:
                value = column.values[value_id]
                if not value or int(sizes[value_id]) == 0:
                    continue
                name = f"{field}={value} ({int(sizes[value_id]):,}) {facets_name}"
                queries[name] = page(f'{field}: {{ eq: "{value}" }}', facets)
        for stack in snapshot.dictionaries["stacks"].values[:3]:
            queries[f"stack={stack} {facets_name}"] = page(f'stack: {{ eq: "{stack}" }}', facets)
        package = parameters["package"]
        queries[f"package+variant {facets_name}"] = page(
            f'package: {{ eq: "{package}" }}, variants: ["{parameters["variant"]}"]', facets
        )
        queries[f"package+target, first 100 {facets_name}"] = page(
            f'package: {{ eq: "{package}" }}, target: {{ eq: "{parameters["target"]}" }}',
            facets,
            100,
        )
        # The largest inline-able: the biggest value of a field within the rows threshold,
        # a 100-spec page of it (hostile.py's `largest_inline` over a filter).
        sizes = snapshot.columns["os"].postings.sizes()
        within = [int(i) for i in np.flatnonzero(sizes <= limit)]
        if within:
            value = snapshot.columns["os"].values[max(within, key=lambda i: int(sizes[i]))]
            queries[f"largest inline: os={value}, first 100 {facets_name}"] = (
                f'{{ specs(filter: {{ os: {{ eq: "{value}" }} }}, first: 100) {{ totalCount '
                "nodes { hash name version os target compiler { name version } } "
                f"facets {{ {facets} }} }} }}"
            )
        for prefix in ("a", "ab", "abc"):
            queries[f"hashPrefix={prefix} {facets_name}"] = page(f'hashPrefix: "{prefix}"', facets)
    return queries


def searches(snapshot: Any) -> dict[str, str]:
    """Package searches and spec searches (a 20-spec page with the 7 facets) of words
    spread over the vocabulary, their 3-letter prefixes (which expand to many terms),
    typos, and 2, 8 and 32 words together."""
    import random

    rng = random.Random(1)
    vocabulary = snapshot.text._vocabulary
    words = vocabulary[:: max(1, len(vocabulary) // 25)]
    texts = {f"word {w}": w for w in words}
    texts |= {f"prefix {w[:3]}": w[:3] for w in words if len(w) > 3}
    texts |= {f"typo {w[:-1]}x": f"{w[:-1]}x" for w in words if len(w) >= 5}
    for count in (2, 8, 32):
        for n in range(3):
            chosen = rng.sample(vocabulary, count)
            texts[f"{count} words #{n}"] = " ".join(chosen)
            texts[f"{count} prefixes #{n}"] = " ".join(w[:3] for w in chosen)
    queries: dict[str, str] = {}
    for name, text in texts.items():
        queries[f"search packages: {name}"] = (
            f'{{ packages(search: "{text}", first: 20) {{ totalCount nodes {{ name }} }} }}'
        )
        queries[f"search specs: {name}"] = (
            f'{{ specs(search: "{text}", first: 20) {{ totalCount nodes {{ hash name version }} '
            f"facets {{ {SMALL_FACETS} {TOP_FACETS} }} }} }}"
        )
    return queries


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from cachegql.index import IndexStore
    from cachegql.schema import Context, build_schema
    from cachegql.schema.direct import Ready
    from cachegql.schema.inline import INLINE_MAX_PRICE, INLINE_MAX_READS, runs_inline
    from cachegql.server.holder import settle
    from cachegql.server.offload import runs_inline as short_document

    store = IndexStore(args.index)
    settle()
    schema = build_schema()
    assert schema.direct is not None
    parameters = choose_parameters(store)
    queries = {
        **cachegql_queries(parameters),
        **WORST,
        **sweep(store.snapshot(), parameters, INLINE_MAX_READS),
        **searches(store.snapshot()),
    }
    rows = []
    for name, query in queries.items():
        # Once first: a search's estimate is known once its words were read (as in the
        # server, whose first request of them runs in a thread).
        schema.answer_sync(query, context=Context(store=store))
        context = Context(store=store)
        estimate_started = time.perf_counter()
        ready = schema.direct.ready(query, None, None, context)
        reads, cost, inline = None, None, short_document(query)
        if isinstance(ready, Ready):
            cost = ready.cost
            reads = (
                None
                if ready.reads is None
                else ready.reads(ready.variables, context, ready.arguments)
            )
            inline = inline or (
                ready.reads is not None
                and runs_inline(ready.cost, ready.reads, ready.variables, context, ready.arguments)
            )
        estimate_ms = (time.perf_counter() - estimate_started) * 1000
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            schema.answer_sync(query, context=Context(store=store))
            times.append(time.perf_counter() - started)
        median, worst = statistics.median(times) * 1000, max(times) * 1000
        rows.append((reads, cost, name, inline, median, worst, estimate_ms))
    print(f"inline: price <= {INLINE_MAX_PRICE:,} and rows read <= {INLINE_MAX_READS:,}\n")
    print("| query | price | rows read | inline | median ms | max ms | pricing ms |")
    print("|---|---|---|---|---|---|---|")
    for reads, cost, name, inline, ms, worst, priced in sorted(
        rows, key=lambda r: (r[0] or 0, r[2])
    ):
        shown = "-" if reads is None else f"{reads:,}"
        price = "-" if cost is None else f"{cost:,}"
        yes = "yes" if inline else "no"
        print(f"| {name} | {price} | {shown} | {yes} | {ms:.2f} | {worst:.2f} | {priced:.2f} |")
    print(f"\nslowest operation with price <= {INLINE_MAX_PRICE:,}, by rows read:\n")
    print("| rows read <= | operations | slowest median ms | its query |")
    print("|---|---|---|---|")
    for threshold in THRESHOLDS:
        within = [
            r
            for r in rows
            if r[0] is not None and r[0] <= threshold and (r[1] or 0) <= INLINE_MAX_PRICE
        ]
        if within:
            slowest = max(within, key=lambda r: r[4])
            print(f"| {threshold:,} | {len(within)} | {slowest[4]:.2f} | {slowest[2]} |")
    inline_rows = [r for r in rows if r[3]]
    slowest = max(inline_rows, key=lambda r: r[4])
    print(f"\nslowest inline: {slowest[2]}, {slowest[4]:.2f} ms (max {slowest[5]:.2f} ms)")
    priciest = max(rows, key=lambda r: r[6])
    print(f"longest pricing and estimate: {priciest[2]}, {priciest[6]:.2f} ms")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
