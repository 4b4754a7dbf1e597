"""Two installs of cachegql served in turn on the same index, under the same load.

    python bench/ab.py --index DIR --before VENV_A --after VENV_B [--rounds 3] [--duration 10]
        [--floor]

For each round and each install (interleaved, so that drift of the machine hits both),
`cachegql serve` with 1 worker (`--workers`) answers a hash-prefix lookup (or `--query`
`selective_page`, ...), with and without its
response cache, under `bench/loadgen.py` (16 connections, bounded in time and count).
Prints one line per run and a summary of medians. Extra serve flags per side with
--before-flag/--after-flag (repeatable). Used to measure what a change to the HTTP layer
costs per request. With --floor, the bare starlette floor (`bench/floor_app.py`, served by
uvicorn as `run.py` serves it, answering cachegql's own answer) runs in turn with them, and
the summary gives each side's req/s as a share of the floor's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from run import (  # type: ignore[import-not-found]
    PORT,
    VENV,
    WORK,
    children,
    cpu_seconds,
    floor_command,
    load,
    post,
    server,
)

QUERY = '{ spec(hash: "%s") { name version compiler { name version } } }'


def prefix(index: Path) -> str:
    """A hash prefix of 7 characters of some spec of the index (its first hash column)."""
    from cachegql.index import IndexStore

    store = IndexStore(index)
    try:
        snapshot = store.snapshots[store.default_tag]
        return str(snapshot.hash_of(snapshot.num_specs // 2))[:7]
    finally:
        store.close()


def serve_command(venv: Path, index: Path, workers: int, flags: list[str]) -> list[str]:
    return [
        str(venv / "bin" / "cachegql"),
        "serve",
        "--index",
        str(index),
        "--port",
        str(PORT),
        "--reload-interval",
        "0",
        "--workers",
        str(workers),
        *flags,
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--before", type=Path, required=True, help="a venv with cachegql")
    parser.add_argument("--after", type=Path, required=True, help="a venv with cachegql")
    parser.add_argument("--before-flag", action="append", default=[])
    parser.add_argument("--after-flag", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--hash", help="the hash prefix to look up (default: one of the index)")
    parser.add_argument(
        "--query", help="instead, one of run.py's queries by name (e.g. selective_page)"
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--only-uncached", action="store_true")
    parser.add_argument("--floor", action="store_true", help="the bare starlette floor too")
    args = parser.parse_args()
    args.index = args.index.resolve()  # the servers run from the repository's root
    query = QUERY % (args.hash or prefix(args.index))
    if args.query:
        from run import cachegql_queries, choose_parameters  # type: ignore[import-not-found]

        from cachegql.index import IndexStore

        store = IndexStore(args.index)
        query = cachegql_queries(choose_parameters(store))[args.query]
        store.close()
    caches = ("uncached",) if args.only_uncached else ("uncached", "cached")
    load_args = argparse.Namespace(concurrency=16, duration=args.duration, max_requests=500_000)
    url = f"http://127.0.0.1:{PORT}/graphql"
    sides = {"before": (args.before, args.before_flag), "after": (args.after, args.after_flag)}
    floor_body = WORK / "floor-ab.json"
    if args.floor:
        WORK.mkdir(parents=True, exist_ok=True)
        with server(serve_command(args.after, args.index, args.workers, args.after_flag), url):
            floor_body.write_bytes(post(url, query))
        sides["floor"] = (args.after, [])
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for round_ in range(args.rounds):
        for cache in caches:
            for side, (venv, flags) in sides.items():
                env = None
                if side == "floor":
                    # This checkout's floor, which listens as its `cachegql serve` does.
                    command = floor_command(VENV.parent, args.workers)
                    env = {"BENCH_FLOOR_BODY": str(floor_body)}
                else:
                    command = serve_command(venv, args.index, args.workers, flags)
                    if cache == "uncached":
                        command += ["--response-cache-mb", "0"]
                with server(command, url, env=env, workers=args.workers) as (process, _):
                    pids = [process.pid, *children(process.pid)]
                    spent = cpu_seconds(pids)
                    workers = children(process.pid) if args.workers > 1 else None
                    result = load(PORT, query, load_args, workers)
                    spent = cpu_seconds(pids) - spent
                result["cpu_us"] = spent / max(1, result["requests"]) * 1e6
                results.setdefault((side, cache), []).append(result)
                print(
                    f"round {round_ + 1} {cache:8} {side:6} {result['rps']:8.0f} req/s "
                    f"p50 {result['p50_ms']:.2f} ms p99 {result['p99_ms']:.2f} ms "
                    f"errors {result['errors']}, server CPU {result['cpu_us']:.0f} us/request"
                    + (
                        f", connections {'/'.join(map(str, result['connections']))}"
                        if workers
                        else ""
                    ),
                    flush=True,
                )
    print("\nmedians over rounds")
    for cache in caches:
        rps = {s: statistics.median(r["rps"] for r in results[(s, cache)]) for s in sides}
        cpu = {s: statistics.median(r["cpu_us"] for r in results[(s, cache)]) for s in sides}
        before, after = rps["before"], rps["after"]
        change = (after - before) / before * 100
        print(f"{cache:8} before {before:8.0f} req/s  after {after:8.0f} req/s  {change:+.1f}%")
        print(
            f"{cache:8} server CPU per request: before {cpu['before']:.0f} us, "
            f"after {cpu['after']:.0f} us"
        )
        if "floor" in rps:
            floor = rps["floor"]
            print(
                f"{cache:8} floor {floor:8.0f} req/s ({cpu['floor']:.0f} us): before "
                f"{before / floor:.1%}, after {after / floor:.1%} of the floor"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
