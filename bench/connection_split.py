"""How 16 keep-alive connections opened at once fall to 2 workers: shared socket or one each.

    .venv/bin/python bench/connection_split.py [--starts 20] [--workers 2] [--concurrency 16]

Starts the floor (`bench/floor_app.py`, which listens as `cachegql serve` does) `--starts`
times with its workers sharing one socket (`--shared-socket`, uvicorn's way) and as many
with a socket each (the default on Linux), in turn; each time `bench/loadgen.py` opens
`--concurrency` connections for 2 s, and the connections each worker holds are read from
/proc (`bench/connections.py`). Prints every split and, per way, how often one worker held
three quarters of the connections or more (it then answers them alone at one core's rate).
Loopback only; every load is bounded to 2 s.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import PORT, VENV, WORK, children, floor_command, load, server

WAYS = {"shared socket": True, "a socket each": False}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    body = WORK / "floor-split.json"
    WORK.mkdir(parents=True, exist_ok=True)
    body.write_text(json.dumps({"data": {"ping": True}}))
    load_args = argparse.Namespace(concurrency=args.concurrency, duration=2.0, max_requests=10**6)
    url = f"http://127.0.0.1:{PORT}/graphql"
    splits: dict[str, list[list[int]]] = collections.defaultdict(list)
    rates: dict[str, list[float]] = collections.defaultdict(list)
    for start in range(args.starts):
        for way, shared in WAYS.items():
            command = floor_command(VENV.parent, args.workers, shared_socket=shared)
            env = {"BENCH_FLOOR_BODY": str(body)}
            with server(command, url, env=env, workers=args.workers) as (process, _):
                result = load(PORT, "{ ping }", load_args, children(process.pid))
            splits[way].append(result["connections"])
            rates[way].append(result["rps"])
            split = "/".join(map(str, result["connections"]))
            print(f"start {start + 1:2} {way:14} {split:6} {result['rps']:8.0f} req/s", flush=True)
    print()
    lopsided = args.concurrency * 3 / 4
    for way in WAYS:
        most = [max(split) for split in splits[way]]
        print(
            f"{way:14}: one worker held >= {lopsided:.0f} of {args.concurrency} in "
            f"{sum(m >= lopsided for m in most)} of {len(most)} starts; "
            f"most held by one worker, median {sorted(most)[len(most) // 2]}, max {max(most)}; "
            f"req/s median {sorted(rates[way])[len(rates[way]) // 2]:.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
