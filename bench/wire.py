"""CPU per request of uvicorn's HTTP protocol and the app together, in process, no sockets.

    .venv/bin/python bench/wire.py --index DIR [--requests 10000] [--rounds 3] [--one-worker]

The HTTP numbers of `run.py` and `ab.py` are req/s under a load generator on the machine's
2 cores, shared with other work: they move by tens of percent from run to run. This feeds
the raw bytes of the load generator's request (a hash lookup, or `--query` another of
`run.py`'s queries, with its parameters) to uvicorn's httptools
protocol, as `cachegql serve` builds it (its guarded protocol, the app from
`create_app`) and as the floor's uvicorn does (`bench/floor_app.py`, answering
cachegql's own answer), on one uvloop, and prints the median over 5 rounds of CPU µs per
request: the server's whole work for a request but the socket calls, which cost the floor
and cachegql alike. Each row runs in a process of its own, the rows in turn `--rounds`
times (the machine's drift hits each alike); the table has each row's median. By default
metrics are kept as with 2 workers (prometheus_client's multiprocess files);
`--one-worker` keeps them in memory. Run it with another checkout's Python to measure that
checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

QUERY = (
    b'{"query": "{ spec(hash: \\"%s\\") { hash name version compiler { name version } '
    b'os target } }"}'
)
QUERIES = ("hash_prefix", "selective_page", "package_search")
ROWS = ("floor", "cachegql cached", "cachegql uncached")
BODY = Path(tempfile.gettempdir()) / "cachegql-wire-floor-body.json"


class _Transport(asyncio.Transport):
    """What uvicorn writes to, kept; a future resolved at each write."""

    def __init__(self) -> None:
        super().__init__()
        self.out: list[bytes] = []
        self.written: asyncio.Future[None] | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.out.append(bytes(data))
        if self.written is not None and not self.written.done():
            self.written.set_result(None)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        addresses = {"sockname": ("127.0.0.1", 8871), "peername": ("127.0.0.1", 50000)}
        return addresses.get(name, default)

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def can_write_eof(self) -> bool:
        return True

    def get_write_buffer_size(self) -> int:
        return 0


def _request(body: bytes) -> bytes:
    head = (
        b"POST /graphql HTTP/1.1\r\nHost: 127.0.0.1:8871\r\nContent-Type: application/json\r\n"
        b"Accept: application/json\r\nContent-Length: %d\r\nConnection: keep-alive\r\n\r\n"
    )
    return head % len(body) + body


async def _measure(app: Any, protocol_class: Any, request: bytes, count: int) -> dict[str, Any]:
    from uvicorn.config import Config
    from uvicorn.server import ServerState

    loop = asyncio.get_running_loop()
    # As both are served: no uvicorn access log (cachegql logs its own, off here).
    config = Config(
        app=app,
        loop="none",
        http="httptools",
        lifespan="off",
        access_log=False,
        log_level="warning",
    )
    config.load()
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    transport = _Transport()
    protocol.connection_made(transport)

    async def one() -> bytes:
        transport.out.clear()
        while True:  # the head and the body may come in one write or two
            transport.written = loop.create_future()
            if not transport.out:
                protocol.data_received(request)
            await transport.written
            answer = b"".join(transport.out)
            head, _, body = answer.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            )
            if len(body) >= length:
                await asyncio.sleep(0)  # the end of the request's task
                return answer

    for _ in range(300):  # warm: plans, caches
        answer = await one()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    rounds = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(count // 5):
            await one()
        rounds.append((time.process_time() - started) / (count // 5) * 1e6)
    return {"us": statistics.median(rounds), "answer": answer.partition(b"\r\n\r\n")[2].decode()}


def one_row(row: str, index: Path, count: int, workers: int, query: str) -> dict[str, Any]:
    if workers > 1:  # as `cachegql serve --workers 2` runs: metrics in files
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="cachegql-wire-")
    warnings.simplefilter("ignore")
    import uvloop

    from cachegql.index import IndexStore

    store = IndexStore(index)
    if query == "hash_prefix":
        snapshot = store.snapshots[store.default_tag]
        body = QUERY % str(snapshot.hash_of(snapshot.num_specs // 2))[:7].encode()
    else:  # as `run.py` asks it
        sys.path.insert(0, str(Path(__file__).parent))
        from run import cachegql_queries, choose_parameters

        body = json.dumps({"query": cachegql_queries(choose_parameters(store))[query]}).encode()
    store.close()
    if row == "floor":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        os.environ["BENCH_FLOOR_BODY"] = str(BODY)
        sys.path.insert(0, str(Path(__file__).parent))
        from floor_app import app

        protocol_class: Any = HttpToolsProtocol
    else:
        from cachegql.server.app import Settings, create_app
        from cachegql.server.protocol import protocol

        cache_mb = 64 if row == "cachegql cached" else 0
        settings = Settings(
            index=index, reload_interval=0, access_log=False, response_cache_mb=cache_mb
        )
        app = create_app(settings)
        protocol_class = protocol(settings.read_timeout)
    return uvloop.run(_measure(app, protocol_class, _request(body), count))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-worker", action="store_true", help="metrics in memory")
    parser.add_argument(
        "--query", choices=QUERIES, default="hash_prefix", help="which of run.py's queries"
    )
    parser.add_argument("--row", choices=ROWS, help=argparse.SUPPRESS)  # one, in this process
    args = parser.parse_args(argv)
    workers = 1 if args.one_worker else 2
    if args.row:
        print(json.dumps(one_row(args.row, args.index, args.requests, workers, args.query)))
        return 0
    results: dict[str, list[float]] = {row: [] for row in ROWS}
    for _ in range(args.rounds):
        for row in (*ROWS[1:], ROWS[0]):  # the floor answers with cachegql's own answer
            command = [sys.executable, __file__, *argv, "--row", row]
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            result = json.loads(done.stdout)
            results[row].append(result["us"])
            if row == "cachegql cached":
                BODY.write_text(result["answer"])
    floor = statistics.median(results["floor"])
    print("| server | CPU us/request (median; each round) | the floor's req/s share, CPU-bound |")
    print("|---|---|---|")
    for row in ROWS:
        us = statistics.median(results[row])
        rounds = ", ".join(f"{r:.1f}" for r in results[row])
        print(f"| {row} | {us:.1f} ({rounds}) | {floor / us:.1%} |")
    metrics = "in memory (1 worker)" if workers == 1 else "in files (2 workers)"
    print(
        f"({args.query}, {args.requests:,} requests per row, median of 5 rounds, "
        f"metrics {metrics}; load {os.getloadavg()[0]:.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
