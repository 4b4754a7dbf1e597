"""In one process, lists completed a field at a time against item by item.

    .venv/bin/python bench/columns.py --index DIR [--rounds 6]

A compiled plan completes a list of `COLUMN_MIN_ITEMS` or more objects a field at a time
(`schema/compiled.py`). This answers four queries with that threshold and with one no
list reaches (every list item by item, as before), the two in turn in one process for
`--rounds` rounds, so that the machine's drift hits both alike, and prints the minimum
and the median over the rounds of each round's median µs. The answers are checked equal.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling modules

from one_client import page_packages  # type: ignore[import-not-found]

QUERIES = {
    "stacks (36 stacks x 4 small facets)": "{ stacks { name numSpecs numPackages "
    "compilers { value count } oss { value count } platforms { value count } "
    "targets { value count } } }",
    "page100_nested": "{ specs(first: 100) { nodes { hash name version compiler { name "
    "version } os target variants { name value } stacks package { name numSpecs "
    "versions } } } }",
    "20-spec page with 6 facets": "{ specs(first: 20, filter: { package: { eq: PACKAGE } }) "
    "{ totalCount nodes { hash name version } facets { compilers { value count } "
    "oss { value count } platforms { value count } targets { value count } "
    "stacks { value count } versions(first: 20) { value count } } } }",
    "every target and version bucket": "{ specs(first: 1) { facets { targets { value count } "
    "versions { value count } } } }",
}
ITEM_BY_ITEM = 10**9


def main(argv: list[str]) -> int:
    from cachegql.index import IndexStore
    from cachegql.schema import Context, build_schema, compiled

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    store = IndexStore(args.index)
    snapshot = store.snapshot()
    package = page_packages(snapshot)[0]
    queries = {k: q.replace("PACKAGE", f'"{package}"') for k, q in QUERIES.items()}
    schema = build_schema()
    thresholds = {"a field at a time": compiled.COLUMN_MIN_ITEMS, "item by item": ITEM_BY_ITEM}
    answers = {}
    for label, threshold in thresholds.items():
        compiled.COLUMN_MIN_ITEMS = threshold  # read by the plans as they run
        context = Context(store)
        answers[label] = [schema.answer_sync(q, None, context).body for q in queries.values()]
    assert answers["a field at a time"] == answers["item by item"]
    assert all(body is not None for body in answers["item by item"])
    medians: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        order = list(thresholds.items())
        for label, threshold in order if round_ % 2 == 0 else order[::-1]:
            compiled.COLUMN_MIN_ITEMS = threshold
            for name, query in queries.items():
                count = 30 if name in ("page100_nested", "every target and version bucket") else 150
                times = []
                for _ in range(count):
                    started = time.perf_counter()
                    schema.answer_sync(query, None, Context(store))
                    times.append(time.perf_counter() - started)
                medians.setdefault((name, label), []).append(statistics.median(times) * 1e6)
    compiled.COLUMN_MIN_ITEMS = thresholds["a field at a time"]
    store.close()
    tag = f"{snapshot.tag}, {snapshot.num_specs:,} specs"
    print(f"| query ({tag}) | " + " | ".join(thresholds) + " |")
    print("|---|---|---|")
    for name in queries:
        cells = []
        for label in thresholds:
            values = medians[(name, label)]
            cells.append(f"min {min(values):,.0f} µs, median {statistics.median(values):,.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
