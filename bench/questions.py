"""What users ask a build cache, timed: `runsOn` and a 300-hash batch lookup at 1M specs
(in process and over HTTP), and `cachegql check` on a 500-spec lockfile.

Run from the repository root after `make bench` built its 1M pages index, or with
`--index DIR` (any index) and `--mirror-index DIR` (an index of a build cache, which
records dependencies, for `check`; `--mirror-db FILE` is that cache's `index.json`, from
which the lockfile is taken). Prints one JSON object with the numbers and `uptime`.

    .venv/bin/python bench/questions.py --index bench/work/index-pages-1000000-8000-seed1 \
        --mirror-index bench/work/index-mirror-100000-800-seed1 \
        --mirror-db bench/work/mirror-100000-800-seed1/mirror/build_cache/index.json

Every load is bounded: `--concurrency` connections for at most `--duration` seconds and
`--max-requests` requests, on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling modules

from run import (
    PORT,
    VENV,
    cachegql_command,
    load,
    quantiles,
    sequential_latency,
    server,
    settle,
    timed,
)

from cachegql.index import IndexStore, check_environment, read_lockfile
from cachegql.schema import Context, build_schema

BATCH = 300
LOCK_SPECS = 500
FACETS = "facets { targets { value count } compilers { value count } }"


def _hashes(store: IndexStore, count: int, absent: int) -> list[str]:
    """`count` hashes of the default tag, spread over it, and `absent` made-up ones."""
    snapshot = store.snapshot()
    step = max(1, snapshot.num_specs // count)
    present = [snapshot.hash_of(i) for i in range(0, snapshot.num_specs, step)][: count - absent]
    made_up = [
        base64.b32encode(hashlib.sha1(f"absent {i}".encode()).digest()).decode().lower()
        for i in range(absent)
    ]
    return present + made_up


def queries(store: IndexStore) -> dict[str, str]:
    hashes = json.dumps(_hashes(store, BATCH, 10))
    return {
        "runs_on_page": '{ specs(filter: {runsOn: "zen2"}, first: 20) { totalCount '
        f"nodes {{ hash target }} {FACETS} }} }}",
        "runs_on_package": '{ specs(filter: {runsOn: "neoverse_v2", package: {prefix: "py-"}}, '
        f"first: 20) {{ totalCount nodes {{ hash target }} {FACETS} }} }}",
        "runs_on_range_query": '{ specs(query: "target=x86_64_v2:", first: 20) { totalCount '
        "nodes { hash } } }",
        "hash_batch_300": f"{{ specs(filter: {{hash: {{in: {hashes}}}}}, first: {BATCH}) "
        "{ totalCount missing nodes { hash name version } } }",
    }


def in_process(index: Path, named: dict[str, str]) -> dict[str, Any]:
    store = IndexStore(index)
    settle()
    schema = build_schema()
    found: dict[str, Any] = {}
    for name, query in named.items():
        answer = schema.answer_sync(query, context=Context(store=store))
        body = json.loads(answer.body or b"{}")
        if answer.body is None or "errors" in body:
            raise RuntimeError(f"{name}: {answer}")

        def call(query: str = query) -> None:
            schema.answer_sync(query, context=Context(store=store))

        found[name] = {**quantiles(timed(call)), "execution": answer.execution}
        found[name]["answer"] = {
            k: (len(v) if isinstance(v, list) else v)
            for k, v in body["data"]["specs"].items()
            if k in ("totalCount", "missing")
        }
    store.close()
    return found


def over_http(index: Path, named: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    url = f"http://127.0.0.1:{PORT}/graphql"
    found: dict[str, Any] = {}
    # No response cache: each request is answered, not replayed.
    with server(cachegql_command(index, 1, cache=False), url):
        for name, query in named.items():
            found[name] = {
                "sequential": sequential_latency(url, query, runs=100),
                "load": load(PORT, query, args),
            }
    return found


def lockfile_of(db: Path, specs: int, seed: int = 1) -> bytes:
    """A version 5 lockfile of about `specs` concrete specs: DAGs of random binaries of the
    cache's own index.json, a tenth of them changed (one variant flipped: missing, with
    a near binary) so that `check` has misses to explain."""
    installs = json.loads(db.read_bytes())["database"]["installs"]
    nodes = {h: r["spec"] for h, r in installs.items()}
    binaries = [h for h, r in installs.items() if r.get("in_buildcache")]
    rng = random.Random(seed)
    pinned: dict[str, dict[str, Any]] = {}
    roots: list[str] = []
    while len(pinned) < specs:
        root = rng.choice(binaries)
        roots.append(root)
        todo = [root]
        while todo and len(pinned) < specs:
            digest = todo.pop()
            if digest in pinned or digest not in nodes:
                continue
            pinned[digest] = nodes[digest]
            todo.extend(d["hash"] for d in nodes[digest].get("dependencies") or ())
    changed = rng.sample(sorted(pinned), len(pinned) // 10)
    for digest in changed:
        node = dict(pinned[digest])
        booleans = [k for k, v in (node.get("parameters") or {}).items() if isinstance(v, bool)]
        if booleans:
            name = rng.choice(booleans)
            node["parameters"] = {**node["parameters"], name: not node["parameters"][name]}
        node["hash"] = ("z" + digest[1:]) if digest[0] != "z" else ("y" + digest[1:])
        pinned[digest] = node  # keyed by the old hash: what depends on it still finds it
    document = {
        "_meta": {"file-type": "spack-lockfile", "lockfile-version": 5, "specfile-version": 4},
        "roots": [{"hash": h, "spec": nodes[h]["name"]} for h in dict.fromkeys(roots)],
        "concrete_specs": pinned,
    }
    return json.dumps(document).encode()


def check(index: Path, db: Path) -> dict[str, Any]:
    data = lockfile_of(db, LOCK_SPECS)
    with tempfile.TemporaryDirectory() as folder:
        lock = Path(folder) / "spack.lock"
        lock.write_bytes(data)
        started = time.perf_counter()
        result = subprocess.run(
            [str(VENV / "cachegql"), "check", str(lock), "--index", str(index), "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        cli_seconds = time.perf_counter() - started
    body = json.loads(result.stdout)
    store = IndexStore(index)
    lockfile = read_lockfile(data, "spack.lock")
    snapshot = store.snapshot()
    samples = timed(lambda: check_environment(snapshot, lockfile, 3), min_runs=5, min_seconds=2)
    store.close()
    return {
        "specs": len(body["specs"]),
        "cached": body["cached"],
        "missing": body["total"] - body["cached"],
        "exit_status": result.returncode,
        "cli_wall_s": round(cli_seconds, 2),
        "in_process": quantiles(samples),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--mirror-index", type=Path)
    parser.add_argument("--mirror-db", type=Path)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--max-requests", type=int, default=20_000)
    args = parser.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    store = IndexStore(args.index)
    named = queries(store)
    specs = store.snapshot().num_specs
    store.close()
    report: dict[str, Any] = {"uptime_before": uptime.strip(), "specs": specs}
    report["in_process"] = in_process(args.index, named)
    report["http"] = over_http(args.index, named, args)
    if args.mirror_index is not None and args.mirror_db is not None:
        report["check"] = check(args.mirror_index, args.mirror_db)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    report["uptime_after"] = uptime.strip()
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
