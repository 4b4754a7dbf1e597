"""Answers to dependency queries over one index, as one JSON file: run it with two
checkouts' Pythons over their builds of the same source and compare the files byte for
byte (`cmp`), to show that a change of the dependency index changed no answer.

    .venv/bin/python bench/dagdiff.py INDEX OUT.json [--every N]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cachegql.index import IndexStore
from cachegql.schema import Context, build_schema

FIXED = [
    "^zlib@1.3.1",
    "hdf5 ^openmpi@5",
    "^openmpi@5 %gcc",
    "py-numpy ^openblas",
    "^gcc-runtime ^zlib",
]
NESTED = '{ dependsOn: { dependsOn: { package: { eq: "%s" } } } }'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("index", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--every", type=int, default=10, help="every Nth package name")
    args = parser.parse_args()
    store = IndexStore(args.index)
    schema = build_schema()
    names = sorted(store.snapshot().package_ids)[:: args.every]
    queries = [f"^{name}" for name in names] + FIXED
    answers = {}

    def ask(label: str, query: str) -> None:
        result = schema.execute_sync(query, context_value=Context(store=store))
        answers[label] = result.data if not result.errors else [str(e) for e in result.errors]

    for text in queries:
        ask(text, f'{{ specs(query: "{text}", first: 50) {{ totalCount nodes {{ hash }} }} }}')
    for name in names:
        ask(
            f"dependsOn {name}",
            f'{{ specs(filter: {{ dependsOn: {{ package: {{ eq: "{name}" }} }} }}, first: 50) '
            "{ totalCount nodes { hash } } }",
        )
        ask(
            f"nested {name}",
            f"{{ specs(filter: {NESTED % name}, first: 50) {{ totalCount nodes {{ hash }} }} }}",
        )
        ask(
            f"dependents {name}",
            f'{{ specs(query: "{name}", first: 3) {{ nodes {{ hash '
            "dependents(first: 50) { totalCount nodes { hash } } } } }",
        )
    args.out.write_text(json.dumps(answers, indent=0, sort_keys=True) + "\n")
    print(f"{len(answers)} answers to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
