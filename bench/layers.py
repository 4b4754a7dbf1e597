"""What each layer of the web stack costs per request, in process (no sockets, no uvicorn).

    .venv/bin/python bench/layers.py --index DIR [--requests 20000]

Drives the real app's ASGI callables directly, on one event loop, with a hash lookup
POSTed as an ordinary client sends it, and prints microseconds of CPU per request for
each stack from the endpoint alone to the whole app (each row adds one layer; the
difference is that layer's cost; the one pass takes the same steps as the layers above
it). Uncached: the response cache is off (the plan cache is
warm, as under load); cached: it answers every request after the first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

QUERY = (
    b'{"query": "{ spec(hash: \\"%s\\") '
    b'{ hash name version compiler { name version } os target } }"}'
)
HEADERS = [
    (b"host", b"127.0.0.1:8871"),
    (b"content-type", b"application/json"),
    (b"accept", b"*/*"),
    (b"accept-encoding", b"gzip, deflate"),
    (b"user-agent", b"python-requests/2.32"),
]


def scope_of(body: bytes) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/graphql",
        "raw_path": b"/graphql",
        "root_path": "",
        "query_string": b"",
        "headers": [*HEADERS, (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8871),
        "state": {},
    }


async def per_request(app: Callable[..., Any], body: bytes, count: int) -> float:
    """Median over 5 rounds of the CPU microseconds one request takes through `app`."""
    sent: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent.append(message["status"])

    template = scope_of(body)
    for _ in range(200):  # warm: plans, caches
        await app({**template, "headers": list(template["headers"]), "state": {}}, receive, send)
    assert set(sent) == {200}, sent
    rounds = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(count // 5):
            scope = {**template, "headers": list(template["headers"]), "state": {}}
            await app(scope, receive, send)
        rounds.append((time.process_time() - started) / (count // 5) * 1e6)
    return statistics.median(rounds)


def stacks(index: Path, cache: bool) -> list[tuple[str, Callable[..., Any]]]:
    from cachegql.server.access_log import configure_logger
    from cachegql.server.app import Settings, create_app

    settings = Settings(
        index=index, reload_interval=0, access_log=False, response_cache_mb=64 if cache else 0
    )
    app = create_app(settings)
    state = app.state
    rows = [
        ("endpoint (GraphQL over HTTP)", state.endpoint),
        ("+ response cache", state.response_cache),
        ("+ admission, body limit", state.admission),
    ]
    front = app.build_middleware_stack() if app.middleware_stack is None else app.middleware_stack
    graphql = getattr(front, "graphql", None)  # older checkouts have no front door
    if graphql is not None:
        rows.append(("+ request id, metrics, access record, gzip", graphql))
    post = getattr(front, "post", None)  # the one pass (`fast_post`), if this checkout has it
    if post is not None and post is not graphql:
        rows.append(("the same in one pass (fast_post)", post))
    rows.append(("the whole app (logs off)", app))
    configure_logger("json", Path(os.devnull).open("w"))  # noqa: SIM115 (for the process)
    logged = create_app(Settings(**{**settings.__dict__, "access_log": True}))
    rows.append(("the whole app, a JSON access line each (to /dev/null)", logged))
    rows.append(("the floor's whole app (bench/floor_app.py)", floor_app()))
    return rows


def floor_app() -> Callable[..., Any]:
    """The floor (`bench/floor_app.py`), answering a body of a hash lookup's size."""
    body = Path(tempfile.gettempdir()) / "cachegql-layers-floor-body.json"
    body.write_bytes(b'{"data":{"spec":{"hash":"%s"}}}' % (b"x" * 170))
    os.environ["BENCH_FLOOR_BODY"] = str(body)
    sys.path.insert(0, str(Path(__file__).parent))
    import floor_app

    app: Callable[..., Any] = floor_app.app
    return app


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import uvloop

    from cachegql.index import IndexStore

    store = IndexStore(args.index)
    snapshot = store.snapshots[store.default_tag]
    body = QUERY % str(snapshot.hash_of(snapshot.num_specs // 2))[:7].encode()
    store.close()
    print("| stack | uncached us/request | cached us/request |")
    print("|---|---|---|")
    rows: dict[str, list[float]] = {}
    for cache in (False, True):
        for name, app in stacks(args.index, cache):
            # uvloop, as `cachegql serve` runs (its timers cost less than asyncio's)
            rows.setdefault(name, []).append(uvloop.run(per_request(app, body, args.requests)))
    for name, (uncached, cached) in rows.items():
        print(f"| {name} | {uncached:.1f} | {cached:.1f} |")
    load = os.getloadavg()[0]
    print(f"({args.requests:,} requests per row and mode, median of 5 rounds; load {load:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
