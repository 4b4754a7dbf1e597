"""In process, what the web app's search request costs the schema, a new word each time.

    .venv/bin/python bench/app_search.py --index DIR [--words 200] [--rounds 3]

The document is the app's own `SEARCH` (server/static/app/queries.js: the ranked
packages, each with its count of specs, and facets over every matching spec), sent with a
search word and no filter, as the search page sends it after a pause in typing. Two kinds
of words, each word once a round: package names with a letter dropped (what people type,
matched with a typo), and the ten most common first words of names (`py`, `r`, `perl`:
the slowest searches, matching thousands of packages). Each is answered by
`schema.answer_sync` with a fresh context, as the server does. Prints the median and the
slowest ms of each kind per round (and the slowest word). Run it with another checkout's
Python to measure that checkout.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ROOT / "server" / "static" / "app" / "queries.js"


def app_document(name: str) -> str:
    """A document of the web app, as it sends it (its page size put in)."""
    source = QUERIES.read_text()
    page = re.search(r"export const PAGE = (\d+);", source)
    found = re.search(rf"export const {name} = `(.*?)`;", source, re.DOTALL)
    if page is None or found is None:
        raise SystemExit(f"{QUERIES} has no {name} document")
    return found.group(1).replace("${PAGE}", page.group(1))


def words(names: list[str], count: int) -> dict[str, list[str]]:
    """`count` names with a letter dropped, and the ten most common first words."""
    long_names = [n for n in names if len(n) >= 6][:: max(1, len(names) // count)][:count]
    typed = [n[: len(n) // 2] + n[len(n) // 2 + 1 :] for n in long_names]
    common = [w for w, _ in Counter(n.split("-")[0] for n in names).most_common(10)]
    return {"name, a letter dropped": typed, "common first word": common}


def main(argv: list[str]) -> int:
    from cachegql.index import IndexStore
    from cachegql.schema import Context, build_schema

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--words", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    store = IndexStore(args.index)
    snapshot = store.snapshot()
    names = [snapshot.package(i).name for i in range(snapshot.num_packages)]
    schema = build_schema()
    document = app_document("SEARCH")
    kinds = words(names, args.words)
    # Warm, as a server is after its first searches: the plan, the text index's tables
    # (a word of 5 letters or more builds the typos').
    for word in ("warmup", *kinds["common first word"][:1]):
        schema.answer_sync(document, {"search": word}, context=Context(store=store))
    print(f"{snapshot.num_specs:,} specs, {snapshot.num_packages:,} packages in tag {snapshot.tag}")
    for round_ in range(1, args.rounds + 1):
        for kind, searched in kinds.items():
            times: list[float] = []
            for word in searched:
                started = time.perf_counter()
                context = Context(store=store)
                answer = schema.answer_sync(document, {"search": word}, context=context)
                times.append((time.perf_counter() - started) * 1e3)
                if answer.body is None or b'"errors"' in answer.body:  # a plan, no errors
                    raise SystemExit(f"{word!r}: {answer.execution}, {answer.body!r:.300}")
            slowest = max(range(len(times)), key=times.__getitem__)
            print(
                f"round {round_}, {kind} ({len(searched)} words): median "
                f"{statistics.median(times):.2f} ms, slowest {times[slowest]:.2f} ms "
                f"({searched[slowest]!r})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
