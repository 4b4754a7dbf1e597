"""One keep-alive client, one request at a time: cachegql's latency against the floor's.

    .venv/bin/python bench/one_client.py --index DIR [--server-venv VENV] [--runs 400]
        [--written]

Serves the index with `cachegql serve` (1 worker, no response cache), then sends a hash
lookup and a 20-spec package page with facets, each request with other variables than
any before it (a different hash, a different package), over one keep-alive connection;
with `--written`, the hash or package written into the query's text instead, a new
document each request, as curl or a page building its query string sends it.
The floor (`floor_app.py`, the same uvicorn settings) runs beside it on the next port
and answers the same-sized bodies; the requests go to both in blocks in turn, so that
the machine's drift (tens of percent here from minute to minute) hits both alike.
Prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling modules

from run import PORT, VENV, WORK, cachegql_command, server  # type: ignore[import-not-found]

FLOOR_PORT = PORT + 1
BLOCK = 30

LOOKUP = (
    "query($h: String!) { spec(hash: $h) { hash name version compiler { name version } "
    "os target } }"
)
WARM = 10
PAGE = (
    "query($p: String!) { specs(filter: { package: { eq: $p } }, first: 20) { totalCount "
    "nodes { hash name version } facets { compilers { value count } oss { value count } "
    "platforms { value count } targets { value count } stacks { value count } "
    "versions(first: 20) { value count } } } }"
)


def page_packages(snapshot: Any) -> list[str]:
    """The packages of the snapshot's tag with at least a page (20) of specs."""
    import numpy as np

    sizes = np.diff(snapshot.package_start)
    return [snapshot.package(int(i)).name for i in np.flatnonzero(sizes >= 20)]


def written(query: str, name: str) -> str:
    """`query` with its one variable `name` written in its text: `"%s"`, for each value."""
    operation, _, rest = query.partition("{")
    assert operation.startswith("query(") and rest.count(f"${name}") == 1
    return "{" + rest.replace(f"${name}", '"%s"')


def _body(query: str, name: str, value: str, in_text: bool) -> bytes:
    if in_text:
        return json.dumps({"query": written(query, name) % value}).encode()
    return json.dumps({"query": query, "variables": {name: value}}).encode()


def bodies(index: Path, runs: int, in_text: bool = False) -> dict[str, list[bytes]]:
    from cachegql.index import IndexStore

    store = IndexStore(index)
    snapshot = store.snapshot()
    step = max(1, snapshot.num_specs // runs)
    hashes = [str(snapshot.hash_of(row))[:7] for row in range(0, snapshot.num_specs, step)]
    names = page_packages(snapshot)[:runs]
    store.close()
    return {
        "hash lookup": [_body(LOOKUP, "h", h, in_text) for h in hashes][:runs],
        "20-spec page": [_body(PAGE, "p", n, in_text) for n in names],
    }


def _timed(connection: http.client.HTTPConnection, body: bytes) -> float:
    """One request's ms over a keep-alive connection."""
    started = time.perf_counter()
    connection.request("POST", "/graphql", body, {"content-type": "application/json"})
    answer = connection.getresponse()
    answer.read()
    assert answer.status == 200
    return (time.perf_counter() - started) * 1000


def interleaved(payloads: list[bytes]) -> tuple[float, float]:
    """Median ms of cachegql and of the floor, sent the payloads in blocks of `BLOCK`
    in turn (which one first alternates), so that the machine's drift hits both alike.
    A block's first request is not counted: it wakes a server the other one idled
    (sent one by one in turn, each request paid that, which narrowed the ratio)."""
    ours = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    floor = http.client.HTTPConnection("127.0.0.1", FLOOR_PORT, timeout=30)
    samples: dict[http.client.HTTPConnection, list[float]] = {ours: [], floor: []}
    for body in payloads[:WARM]:  # the first few make the plan
        _timed(ours, body)
        _timed(floor, body)
    for number, start in enumerate(range(WARM, len(payloads), BLOCK)):
        for connection in (ours, floor) if number % 2 else (floor, ours):
            block = [_timed(connection, body) for body in payloads[start : start + BLOCK]]
            samples[connection] += block[1:]
    ours.close()
    floor.close()
    return statistics.median(samples[ours]), statistics.median(samples[floor])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--server-venv", type=Path, default=VENV.parent)
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument(
        "--written", action="store_true", help="values written into the text, not variables"
    )
    args = parser.parse_args(argv)
    url = f"http://127.0.0.1:{PORT}/graphql"
    work = bodies(args.index, args.runs, args.written)
    WORK.mkdir(parents=True, exist_ok=True)  # the floor's bodies
    with server(cachegql_command(args.index, 1, False, args.server_venv / "bin"), url):
        for name, payloads in work.items():
            # The floor answers a body as long as cachegql's answer to this query.
            connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
            connection.request(
                "POST", "/graphql", payloads[0], {"content-type": "application/json"}
            )
            body = WORK / f"one-client-{name.replace(' ', '-')}.json"
            body.write_bytes(connection.getresponse().read())
            connection.close()
            command = [str(VENV / "uvicorn"), "bench.floor_app:app", "--port", str(FLOOR_PORT)]
            command += ["--loop", "uvloop", "--http", "httptools", "--no-access-log"]
            command += ["--log-level", "warning"]
            floor_url = f"http://127.0.0.1:{FLOOR_PORT}/graphql"
            with server(command, floor_url, env={"BENCH_FLOOR_BODY": str(body)}):
                ours, floor = interleaved(payloads)
            print(f"{name}: cachegql {ours:.3f} ms, floor {floor:.3f} ms: {ours / floor:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
