"""How fast the largest documents a request can carry are refused (or answered).

    .venv/bin/python bench/refusal.py --index bench/work/index-hostile-200000-v5

Runs the app in process (starlette's TestClient, the real middleware and endpoint) and
posts documents just under the 1 MB body limit, each shaped to be expensive before any
index work: many tokens, many search words, a huge `or` or `in` as a variable, deep
nesting, a fragment fan-out. Prints each one's status, code and median time of 5.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

QUERY = "query($f: SpecFilter) { specs(filter: $f) { totalCount } }"


def fan_out(levels: int, width: int = 4) -> str:
    names = "abcdefgh"[:width]
    lines = ["query F { " + " ".join(f"...L1{x}" for x in names) + " }"]
    for level in range(1, levels + 1):
        body = " ".join(f"...L{level + 1}{x}" for x in names) if level < levels else "__typename"
        lines += [f"fragment L{level}{x} on Query {{ {body} }}" for x in names]
    return "\n".join(lines)


def documents() -> dict[str, dict[str, Any]]:
    words = " ".join(random.Random(1).choices(["mpi", "cuda", "zlib", "hdf5"], k=190_000))
    aliases = " ".join(f"a{i}: __typename" for i in range(80_000))[:999_990]
    nested: dict[str, Any] = {}
    for _ in range(400):
        nested = {"and": [nested]}
    return {
        "1 MB of aliases (token limit)": {"query": "{ " + aliases + " }"},
        "190,000 search words": {"query": f'{{ specs(search: "{words}") {{ totalCount }} }}'},
        "or of 30,000 as a variable": {
            "query": QUERY,
            "variables": {"f": {"or": [{"version": {"ne": "x"}}] * 30_000}},
        },
        "in of 90,000 values as a variable": {
            "query": QUERY,
            "variables": {"f": {"version": {"in": [f"{i}.0" for i in range(90_000)]}}},
        },
        "and nested 400 deep": {"query": QUERY, "variables": {"f": nested}},
        "fragment fan-out, 13 levels": {"query": fan_out(13)},
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

    from cachegql.server.app import Settings, create_app

    settings = Settings(index=args.index, reload_interval=0, access_log=False)
    app = create_app(Settings(**{**settings.__dict__, "response_cache_mb": 0}))
    with TestClient(app) as client:
        for name, body in documents().items():
            data = json.dumps(body).encode()
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                answer = client.post(
                    "/graphql", content=data, headers={"content-type": "application/json"}
                )
                times.append((time.perf_counter() - started) * 1000)
            errors = answer.json().get("errors")
            code = errors[0]["extensions"]["code"] if errors else "data"
            print(
                f"{name}: {len(data) / 1e6:.2f} MB -> {answer.status_code} {code}, "
                f"median {statistics.median(times):.1f} ms (max {max(times):.1f})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
