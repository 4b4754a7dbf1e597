"""In process, what `bench/one_client.py`'s two queries cost the schema, without HTTP.

    .venv/bin/python bench/answer_costs.py --index DIR [--rounds 3]

A hash lookup and a 20-spec package page with facets, each call with variables not sent
just before it (another hash, another package), as one client sends them; each answered
by `schema.answer_sync` with a fresh context, as the server does. Then the same two
with the hash or package written in the query's text, a new document each call (as
curl, a test or a client building its text sends them: 5,000 hashes and every package
of the page's kind, more than the 256 documents kept prepared). Then a 100-spec page
with a directive (`@include`), which plans do not cover: graphql-core's path. Prints the
median µs of each per round. Run it with another checkout's Python to measure that
checkout.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling modules

from one_client import LOOKUP, PAGE, page_packages, written  # type: ignore[import-not-found]

STOCK = (
    "query($x: Boolean!) { specs(first: 100) { nodes { hash name version os target "
    "compiler { name version } variants { name value } stacks size @include(if: $x) } } }"
)


def main(argv: list[str]) -> int:
    from cachegql.index import IndexStore
    from cachegql.schema import Context, build_schema

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    store = IndexStore(args.index)
    snapshot = store.snapshot()
    names = page_packages(snapshot)
    step = max(1, snapshot.num_specs // 5000)
    hashes = [str(snapshot.hash_of(row))[:7] for row in range(0, snapshot.num_specs, step)]
    schema = build_schema()

    def median_us(query: str, name: str, values: list[str], count: int) -> float:
        times = []
        for i in range(count):
            value = values[i % len(values)]
            written = "$" not in query  # the value in the text: a new document each call
            text = query.replace('"%s"', f'"{value}"') if written else query
            started = time.perf_counter()
            answer = schema.answer_sync(text, None if written else {name: value}, Context(store))
            times.append(time.perf_counter() - started)
            result = answer.result  # the stock path's, where no plan answered
            assert answer.body is not None or (result is not None and not result.errors)
        return statistics.median(times) * 1e6

    for round_ in range(1, args.rounds + 1):
        lookup = median_us(LOOKUP, "h", hashes, 2000)
        page = median_us(PAGE, "p", names, 600)
        lookup_text = median_us(written(LOOKUP, "h"), "h", hashes, 2000)
        page_text = median_us(written(PAGE, "p"), "p", names, 600)
        stock = median_us(STOCK, "x", [True], 60)
        print(
            f"round {round_}: hash lookup {lookup:.1f} us, 20-spec page {page:.1f} us; "
            f"written in the text, a new document each: {lookup_text:.1f} us and "
            f"{page_text:.1f} us; 100-spec page through graphql-core {stock:.0f} us"
        )
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
