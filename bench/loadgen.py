"""A small closed-loop HTTP/1.1 load generator: N keep-alive connections, bounded in time and count.

Each connection sends the same POST, waits for the whole response, and records the
latency. It runs in its own process (so its CPU use is visible and separate) and
prints one JSON object: requests, errors, seconds, requests/s and latency quantiles.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass


@dataclass
class LoadResult:
    requests: int
    errors: int
    seconds: float
    rps: float
    p50_ms: float
    p99_ms: float
    max_ms: float


def _request(host: str, port: int, path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json\r\nContent-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = -1
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip(), 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length >= 0:
        await reader.readexactly(length)
    return status


async def _connection(
    host: str,
    port: int,
    request: bytes,
    deadline: float,
    budget: list[int],
    latencies: list[float],
    errors: list[int],
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while budget[0] > 0 and time.perf_counter() < deadline:
            budget[0] -= 1
            started = time.perf_counter()
            writer.write(request)
            status = await _read_response(reader)
            latencies.append(time.perf_counter() - started)
            if status != 200:
                errors[0] += 1
    finally:
        writer.close()


async def run_load(
    host: str,
    port: int,
    path: str,
    body: bytes,
    concurrency: int,
    duration: float,
    max_requests: int,
) -> LoadResult:
    """Drive `concurrency` connections for at most `duration` seconds or `max_requests`."""
    request = _request(host, port, path, body)
    latencies: list[float] = []
    errors = [0]
    budget = [max_requests]
    started = time.perf_counter()
    deadline = started + duration
    await asyncio.gather(
        *(
            _connection(host, port, request, deadline, budget, latencies, errors)
            for _ in range(concurrency)
        )
    )
    seconds = time.perf_counter() - started
    ordered = sorted(latencies) or [0.0]
    return LoadResult(
        requests=len(latencies),
        errors=errors[0],
        seconds=round(seconds, 3),
        rps=round(len(latencies) / seconds, 1),
        p50_ms=round(statistics.median(ordered) * 1000, 3),
        p99_ms=round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 3),
        max_ms=round(ordered[-1] * 1000, 3),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/graphql")
    parser.add_argument("--body", required=True, help="request body (JSON text)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--max-requests", type=int, default=200_000)
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    result = asyncio.run(
        run_load(
            args.host,
            args.port,
            args.path,
            args.body.encode(),
            args.concurrency,
            args.duration,
            args.max_requests,
        )
    )
    json.dump(asdict(result), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
