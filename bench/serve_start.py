"""How long `cachegql serve` takes to be ready on an index, its memory, and a few answers.

    python bench/serve_start.py --venv .venv --index bench/work/index-mirror-1000000-v5

Standard library only. Starts the server (1 worker, no reload, no response cache), times
it to the first 200 of /readyz, reads its resident memory (VmRSS) then, asks five queries
three times each (best time kept) and reads its memory again; prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

QUERIES = {
    "hash": '{ spec(hash: "HASH") { name version } }',
    "page": '{ specs(first: 50, filter: { os: { eq: "ubuntu22.04" } }) '
    "{ totalCount nodes { hash name version } } }",
    "search": '{ specs(search: "mpi cuda", first: 20) { totalCount nodes { hash } } }',
    "depends": '{ specs(query: "^zlib", first: 20) { totalCount nodes { hash } } }',
    "facets": "{ specs(first: 0) { facets { oss { value count } targets { value count } } } }",
}


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return 0.0


def post(port: int, query: str) -> tuple[float, dict[str, Any]]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        json.dumps({"query": query}).encode(),
        {"content-type": "application/json"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=300) as answer:
        body = json.loads(answer.read())
    return time.monotonic() - started, body


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--venv", type=Path, required=True, help="the install (has bin/cachegql)")
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--port", type=int, default=8911)
    args = parser.parse_args(argv)
    command = [str(args.venv / "bin" / "cachegql"), "serve", "--index", str(args.index)]
    command += ["--port", str(args.port), "--reload-interval", "0", "--no-access-log"]
    command += ["--response-cache-mb", "0"]
    started = time.monotonic()
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while True:
            if server.poll() is not None:
                assert server.stderr is not None
                print(server.stderr.read().decode()[-2000:], file=sys.stderr)
                return 1
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{args.port}/readyz") as ready:
                    if ready.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.05)
        ready_s = time.monotonic() - started
        fresh = rss_mb(server.pid)
        first = post(args.port, "{ specs(first: 1) { nodes { hash } } }")[1]
        prefix = first["data"]["specs"]["nodes"][0]["hash"][:8]
        best = {}
        for name, query in QUERIES.items():
            query = query.replace("HASH", prefix)
            best[name] = round(min(post(args.port, query)[0] for _ in range(3)) * 1000, 1)
        report = {
            "index": str(args.index),
            "venv": str(args.venv),
            "ready_s": round(ready_s, 2),
            "rss_fresh_mb": round(fresh),
            "rss_after_queries_mb": round(rss_mb(server.pid)),
            "best_ms": best,
        }
        print(json.dumps(report))
        return 0
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
