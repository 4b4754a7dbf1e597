"""cachegql at 1M specs: build, start, in-process queries, HTTP under load, and a peer.

Run from the repository root with `make bench` (it also installs the peer's own venv),
or `.venv/bin/python bench/run.py [--quick]`. It prints one table and writes the
numbers as JSON to bench/results/. Work files (pages, indexes, the SQLite peer) are
kept in bench/work/ and reused by later runs with the same configuration.

Every load test is bounded: `--concurrency` keep-alive connections for at most
`--duration` seconds and `--max-requests` requests, on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cachegql.index import IndexStore
from cachegql.schema import Context, build_schema

try:  # older checkouts (run with their own Python to compare) have it private
    from cachegql.server.holder import settle
except ImportError:
    from cachegql.server.holder import _settle as settle

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling modules

from connections import connections_per_worker
from machine import machine

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / "work"
RESULTS = ROOT / "bench" / "results"
VENV = ROOT / ".venv" / "bin"
PEER_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
TAGS = "develop,develop-2025-03-30,v0.22.0"
# Another checkout's benchmark may hold 8871 on a shared machine: then set another.
PORT = int(os.environ.get("BENCH_PORT") or os.environ.get("CACHEGQL_BENCH_PORT") or "8871")
REST_SECONDS = 2.5  # past `cachegql.server.idle_memory`'s two idle seconds at most
SMALL_FACETS = (
    "compilers { value count } oss { value count } platforms { value count } "
    "targets { value count } stacks { value count }"
)
TOP_FACETS = "versions(first: 20) { value count } packages(first: 20) { value count }"
ALL_FACETS = SMALL_FACETS + " versions { value count } packages { value count }"
# Targets from the issue, for the verdict column: (kind, limit).
TARGETS: dict[str, tuple[str, float]] = {
    "hash_prefix": ("ms", 0.5),
    "selective_page": ("ms", 3.0),
    "broad_page": ("ms", 25.0),
    "stacks": ("ms", 2.0),
    "package_search": ("ms", 5.0),
    "package_search_typo": ("ms", 5.0),
    "page100_nested": ("ms", 8.0),
}
HTTP_QUERIES = ("hash_prefix", "selective_page", "package_search")
# Issue 22's targets at 2 workers: a share of the floor's rate, round by round, or a rate.
FLOOR_SHARE_TARGETS: dict[tuple[str, str], float] = {
    ("hash_prefix", "uncached"): 0.50,
    ("hash_prefix", "cached"): 0.85,
}
RATE_TARGETS: dict[tuple[str, str], float] = {
    ("selective_page", "uncached"): 4500,
    ("package_search", "uncached"): 2000,
}


@dataclass
class Report:
    """Everything measured, as one JSON document."""

    machine: dict[str, Any]
    config: dict[str, Any]
    build: dict[str, Any] = field(default_factory=dict)
    serving: dict[str, Any] = field(default_factory=dict)
    in_process: dict[str, Any] = field(default_factory=dict)
    http: dict[str, Any] = field(default_factory=dict)
    peer: dict[str, Any] = field(default_factory=dict)
    mirror: dict[str, Any] = field(default_factory=dict)


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def run_cli(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VENV / "cachegql"), *args],
        cwd=ROOT,
        check=True,
        text=True,
        capture_output=True,
        **kwargs,
    )


def pages(config: dict[str, Any]) -> Path:
    """The synthetic pages for `config`, generated once."""
    folder = WORK / f"pages-{config['specs']}-{config['packages']}-seed{config['seed']}"
    marker = folder / ".complete"
    if not marker.exists():
        shutil.rmtree(folder, ignore_errors=True)
        log(f"generating {config['specs']} specs of demo pages into {folder}")
        run_cli(
            "demo-data",
            "--specs",
            str(config["specs"]),
            "--packages",
            str(config["packages"]),
            "--tags",
            TAGS,
            "--seed",
            str(config["seed"]),
            "--out",
            str(folder),
        )
        marker.touch()
    return folder


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def build_peak_mb(closing: str, children_kb: int) -> float:
    """A build's peak RSS in MB as its closing line says it: its own `VmHWM` since stop 47
    (before, the line said `ru_maxrss`, which a process inherits across fork and exec:
    this benchmark's own size, when larger). A manifest reader's peak, when the line names
    one, is its own figure (`helper_peak_mb`). Without the line's figure, the largest
    `ru_maxrss` of this process's children so far: an upper bound, which an earlier child
    (the 1M mirror's generator, several GB) can exceed."""
    said = re.search(r"peak RSS (\d+) MB", closing)
    if said is not None:
        return float(said.group(1))
    return round(children_kb / 1024, 1)


def helper_peak_mb(closing: str) -> float | None:
    """The peak RSS of the build's manifest reader, when its closing line names one."""
    said = re.search(r"\(and (\d+) MB in a manifest reader[,)]", closing)
    return None if said is None else float(said.group(1))


def writer_own_mb(closing: str) -> float | None:
    """The own memory of the build's graph writer (index/disk/graph_writer.py), when its
    closing line names one."""
    said = re.search(r"(?:\(and|,) (\d+) MB of its own in a graph writer\)", closing)
    return None if said is None else float(said.group(1))


def measured_build(venv: Path, source: list[str], out: Path) -> dict[str, Any]:
    """One `cachegql index` (of `venv`) of `source`, its arguments, into `out`, in a child
    process: its wall time, size on disk and peak RSS. A full build (`--full`): else the
    build at `out` from an earlier run is taken over, whole (a build cache unchanged) or
    in part (the text index of pages whose names are the same)."""
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = subprocess.run(
        [str(venv / "cachegql"), "index", *source, "--out", str(out), "--full", "-q"],
        cwd=ROOT,
        check=True,
        text=True,
        capture_output=True,
    )
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {
        "seconds": round(seconds, 1),
        "wall_seconds": seconds,  # unrounded: a ratio of two 4 s builds is not rounded twice
        "size_mb": round(folder_size(out.resolve()) / 1e6, 1),
        "peak_rss_mb": build_peak_mb(result.stdout, max(peak, before)),
        "helper_peak_mb": helper_peak_mb(result.stdout),
        "writer_own_mb": writer_own_mb(result.stdout),
        "summary": result.stdout.strip(),
    }


def build(source: Path, report: Report) -> Path:
    """Build the index of the pages at `source` (`measured_build`)."""
    out = WORK / f"index-{source.name}"
    log("building the index")
    report.build = measured_build(VENV, [str(source)], out)
    log(f"build: {report.build}")
    return out


def choose_parameters(store: IndexStore) -> dict[str, str]:
    """Realistic arguments picked from the data, so that every query has answers."""
    import numpy as np

    snapshot = store.snapshot()
    sizes = np.diff(snapshot.package_start)
    big = int(np.argmax(np.where(sizes >= 20, sizes, 0) * (sizes < 5000)))
    package = snapshot.package(big)
    lo, hi = package.lo, package.hi
    targets = np.bincount(snapshot.columns["target"].codes[lo:hi])
    target = snapshot.columns["target"].values[int(np.argmax(targets))]
    rows = np.arange(lo, hi)[snapshot.columns["target"].codes[lo:hi] == int(np.argmax(targets))]
    atoms = snapshot.sets["atoms"]
    counts: dict[str, int] = {}
    for row in rows.tolist():
        for atom in atoms.members(int(atoms.codes[row])).tolist():
            name = atoms.values[atom]
            counts[name] = counts.get(name, 0) + 1
    # The variant most of those specs have, in Spack's syntax: the page has 20 specs.
    atom = max(sorted(counts), key=counts.__getitem__)
    name, _, value = atom.partition("=")
    variant = {"true": f"+{name}", "false": f"~{name}"}.get(value, atom)
    row = snapshot.num_specs // 3
    while True:  # a 7-character prefix that names exactly one spec
        hash7 = snapshot.hash_of(row)[:7]
        lo, hi = snapshot.hash_prefix_rows(hash7)
        if hi - lo == 1:
            break
        row += 1
    return {
        "hash7": hash7,
        "package": package.name,
        "target": target,
        "variant": variant,
        "words": "torch scatter",
        "typo_words": "torch scater",
        "broad_target": "x86_64_v3",
    }


def cachegql_queries(p: dict[str, str]) -> dict[str, str]:
    return {
        "hash_prefix": f'{{ spec(hash: "{p["hash7"]}") {{ hash name version '
        "compiler { name version } os target } }",
        "package_specs": f'{{ package(name: "{p["package"]}") {{ name versions numSpecs '
        "specs(first: 20) { totalCount nodes { hash version target } } } }",
        "selective_page": f'{{ specs(filter: {{ package: {{ eq: "{p["package"]}" }}, target: '
        f'{{ eq: "{p["target"]}" }}, variants: ["{p["variant"]}"] }}, first: 20) '
        "{ totalCount nodes { hash name version } "
        f"facets {{ {SMALL_FACETS} {TOP_FACETS} }} }} }}",
        "broad_page": f'{{ specs(filter: {{ target: {{ eq: "{p["broad_target"]}" }}, platform: '
        '{ eq: "linux" } }, first: 20) { totalCount nodes { hash name version } '
        f"facets {{ {SMALL_FACETS} {TOP_FACETS} }} }} }}",
        "broad_page_all_buckets": f'{{ specs(filter: {{ target: {{ eq: "{p["broad_target"]}" }}, '
        'platform: { eq: "linux" } }, first: 20) { totalCount nodes { hash name version } '
        f"facets {{ {ALL_FACETS} }} }} }}",
        "stacks": "{ stacks { name numSpecs numPackages compilers { value count } "
        "oss { value count } platforms { value count } targets { value count } } }",
        "package_search": f'{{ packages(search: "{p["words"]}", first: 20) '
        "{ totalCount nodes { name } } }",
        "package_search_typo": f'{{ packages(search: "{p["typo_words"]}", first: 20) '
        "{ totalCount nodes { name } } }",
        "page100_nested": "{ specs(first: 100) { nodes { hash name version "
        "compiler { name version } os target variants { name value } stacks "
        "package { name numSpecs versions } } } }",
    }


def quantiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 3),
        "runs": len(ordered),
    }


def timed(call: Callable[[], Any], min_runs: int = 100, min_seconds: float = 1.0) -> list[float]:
    for _ in range(3):
        call()
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < min_runs or time.perf_counter() - started < min_seconds:
        t = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t)
        if len(samples) >= 5000:
            break
    return samples


def in_process(index: Path, report: Report) -> dict[str, str]:
    """GraphQL execution in this process: no HTTP, each query with a fresh context."""
    store = IndexStore(index)
    settle()  # the collector as the server sets it after loading an index
    schema = build_schema()
    parameters = choose_parameters(store)
    queries = cachegql_queries(parameters)
    report.config["parameters"] = parameters
    # What the server runs: compiled plans to JSON bytes where the checkout has them.
    answer = getattr(schema, "answer_sync", None)
    for name, query in queries.items():
        first = schema.execute_sync(query, context_value=Context(store=store))
        if first.errors:
            raise RuntimeError(f"{name}: {first.errors}")

        def call(query: str = query) -> None:
            if answer is not None:
                answer(query, context=Context(store=store))
            else:
                schema.execute_sync(query, context_value=Context(store=store))

        report.in_process[name] = {**quantiles(timed(call)), "answer": _summary(first.data)}
        log(f"in-process {name}: {report.in_process[name]}")
    store.close()
    return queries


def _summary(data: Any) -> str:
    text = json.dumps(data)
    return text if len(text) < 120 else text[:117] + "..."


def post(url: str, query: str, timeout: float = 30) -> bytes:
    request = urllib.request.Request(
        url,
        data=json.dumps({"query": query}).encode(),
        headers={"content-type": "application/json", "accept": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body: bytes = response.read()
        return body


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds of these processes so far."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


@contextmanager
def server(
    command: list[str],
    url: str,
    env: dict[str, str] | None = None,
    probe: str = "{ tags { name } }",
    workers: int = 1,
) -> Iterator[tuple[subprocess.Popen[bytes], float]]:
    """Start a server; yield it and the seconds from start to its first answered query,
    once all its `workers` listen and are done loading (the first to answer may do so
    alone: a load begun then would leave the others none of its connections)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"server exited: {' '.join(command)}")
            try:
                post(url, probe, timeout=2)
                break
            except OSError:
                time.sleep(0.01)
            if time.perf_counter() - started > 120:
                raise RuntimeError("server did not answer within 120 s")
        first_answer = time.perf_counter() - started
        port = urllib.parse.urlsplit(url).port or 80
        while workers > 1 and len(connections_per_worker(children(process.pid), port)) < workers:
            if time.perf_counter() - started > 120:
                raise RuntimeError(f"not all {workers} workers listen within 120 s")
            time.sleep(0.05)
        # Workers sharing one socket all hold it from their start, listening or not: wait
        # for them to be done loading (a quarter of a second with under 10 ms of CPU).
        spent = cpu_seconds(children(process.pid))
        while workers > 1:
            time.sleep(0.25)
            spent, before = cpu_seconds(children(process.pid)), spent
            if spent - before < 0.01 or time.perf_counter() - started > 120:
                break
        yield process, first_answer
    finally:
        with contextlib.suppress(ProcessLookupError):  # it may have exited on its own
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def load(
    port: int, query: str, args: argparse.Namespace, workers: list[int] | None = None
) -> dict[str, Any]:
    """One load's numbers; with the server's `workers`, how they split its connections too."""
    body = json.dumps({"query": query})
    process = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "bench" / "loadgen.py"),
            "--port",
            str(port),
            "--body",
            body,
            "--concurrency",
            str(args.concurrency),
            "--duration",
            str(args.duration),
            "--max-requests",
            str(args.max_requests),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    split = None
    try:
        if workers:
            split = _split(workers, port, args.concurrency, time.perf_counter() + args.duration)
    finally:
        out, err = process.communicate()
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, process.args, out, err)
    parsed: dict[str, Any] = json.loads(out)
    if split is not None:
        parsed["connections"] = split
    return parsed


def _split(workers: list[int], port: int, connections: int, until: float) -> list[int]:
    """How `workers` split the load's connections, read once all are open (or at `until`)."""
    while True:
        split = connections_per_worker(workers, port)
        if sum(split) >= connections or time.perf_counter() >= until:
            return split
        time.sleep(0.05)


def sequential_latency(url: str, query: str, runs: int = 200) -> dict[str, float]:
    return quantiles(timed(lambda: post(url, query), min_runs=runs, min_seconds=0.5))


def floor_command(venv: Path, workers: int, shared_socket: bool = False) -> list[str]:
    """The floor: a bare starlette endpoint under cachegql's uvicorn settings, its workers
    listening as `cachegql serve`'s do (run from the repository's root, where
    `bench.floor_app` is found)."""
    command = [str(venv / "bin" / "python"), "-m", "bench.floor_app", "--port", str(PORT)]
    return [*command, "--workers", str(workers)] + ["--shared-socket"] * shared_socket


def cachegql_command(index: Path, workers: int, cache: bool = True, venv: Path = VENV) -> list[str]:
    command = [
        str(venv / "cachegql"),
        "serve",
        "--index",
        str(index),
        "--port",
        str(PORT),
        "--workers",
        str(workers),
        "--reload-interval",
        "0",
        "--no-access-log",
    ]
    return command if cache else [*command, "--response-cache-mb", "0"]


def _workers(count: int) -> str:
    return f"{count}_worker{'s' if count > 1 else ''}"


def serving(index: Path, queries: dict[str, str], args: argparse.Namespace, report: Report) -> None:
    """Start-up and memory of `cachegql serve`, then HTTP load with and without its cache
    and on the bare starlette floor, in `--rounds` rounds, each of every server in turn.
    Each row reports its median round, with every round's rate; a share of the floor is
    taken round by round, within the same minutes (the machine's speed drifts by tens of
    percent within minutes: one floor measured minutes after, as until stop 61, put
    cachegql's cached path, the same code for the three queries, at 77% to 114% of it)."""
    url = f"http://127.0.0.1:{PORT}/graphql"
    counts = [int(n) for n in args.workers.split(",")]
    log(f"serving: start to first answer, RSS, HTTP load with {args.workers} workers")
    bodies = {}
    for name in HTTP_QUERIES:  # the floor answers cachegql's own answer
        bodies[name] = WORK / f"floor-{name}.json"
        with server(cachegql_command(index, 1), url):
            bodies[name].write_bytes(post(url, queries[name]))
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for round_ in range(args.rounds):
        log(f"serving: round {round_ + 1} of {args.rounds}")
        for workers in counts:
            for cache in (False, True):
                command = cachegql_command(index, workers, cache, args.server_venv / "bin")
                with server(command, url, workers=workers) as (process, first_answer):
                    pids = children(process.pid) if workers > 1 else [process.pid]
                    key = f"cachegql_{_workers(workers)}_{'cached' if cache else 'uncached'}"
                    first = not cache and round_ == 0
                    if first:
                        report.serving[_workers(workers)] = {
                            "start_to_first_answer_s": round(first_answer, 2),
                            "rss_after_load_mb": [rss_mb(pid) for pid in pids],
                        }
                    workers_pids = pids if workers > 1 else None
                    for name in HTTP_QUERIES:
                        result = load(PORT, queries[name], args, workers_pids)
                        runs.setdefault((name, key), []).append(result)
                        log(f"http {name} {key}: {result}")
                    if first:
                        report.serving[_workers(workers)]["rss_after_queries_mb"] = [
                            rss_mb(pid) for pid in pids
                        ]
            key = f"floor_{_workers(workers)}"
            for name in HTTP_QUERIES:
                floor = floor_command(VENV.parent, workers)
                env = {"BENCH_FLOOR_BODY": str(bodies[name])}
                with server(floor, url, env=env, workers=workers) as (process, _):
                    floor_workers = children(process.pid) if workers > 1 else None
                    result = load(PORT, queries[name], args, floor_workers)
                runs.setdefault((name, key), []).append(result)
                log(f"http {name} {key}: {result}")
    for (name, key), results in runs.items():
        report.http.setdefault(name, {})[key] = median_run(results)


def median_run(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median rate (the lower of the two middle ones), with every round's rate
    in round order (`rounds_rps`), and how each round's connections split across the
    workers, if they were counted (`rounds_connections`): a split moves a rate as much as
    the machine's drift does."""
    middle = sorted(results, key=lambda run: run["rps"])[(len(results) - 1) // 2]
    splits = [run.get("connections") for run in results]
    return {
        **middle,
        "rounds_rps": [run["rps"] for run in results],
        **({"rounds_connections": splits} if all(splits) else {}),
    }


def peer(
    index: Path, source: Path, parameters: dict[str, str], args: argparse.Namespace, report: Report
) -> None:
    """The shared queries, matched as closely as the plugin allows, against datasette +
    datasette-graphql over SQLite and against cachegql (1 worker, no response cache)."""
    import peer_datasette  # a script beside this one (bench/ is on sys.path)

    if not PEER_PYTHON.exists():
        report.peer = {"skipped": f"{PEER_PYTHON} missing: run `make bench` to install the peer"}
        log(report.peer["skipped"])
        return
    database = WORK / f"peer-{source.name}.db"
    if not database.exists():
        log("loading the peer's SQLite database")
        report.peer["load"] = peer_datasette.build_database(source, database, PEER_PYTHON)
    report.peer["load_db_mb"] = round(database.stat().st_size / 1e6, 1)
    url = peer_datasette.graphql_url(PORT)
    sides = {
        "datasette": (
            peer_datasette.QUERIES,
            lambda: peer_datasette.start_server(database, PORT, PEER_PYTHON),
        ),
        "cachegql": (peer_datasette.CACHEGQL_QUERIES, None),
    }
    for side, (templates, start) in sides.items():
        if start is not None:
            process = start()
            context: Any = None
        else:
            context = server(cachegql_command(index, 1, cache=False), url)
            process, _ = context.__enter__()
        try:
            for name, template in templates.items():
                query = peer_datasette.render(template, parameters)
                answer = json.loads(post(url, query))
                entry: dict[str, Any] = {"answer": _summary(answer)}
                if "errors" not in answer:
                    entry["sequential"] = sequential_latency(url, query, runs=100)
                    if name in HTTP_QUERIES:
                        entry["load"] = load(PORT, query, args)
                report.peer.setdefault(name, {})[side] = entry
                log(f"peer {name} {side}: {entry}")
        finally:
            if context is not None:
                context.__exit__(None, None, None)
            else:
                peer_datasette.stop_server(process)


# Issue 19: "At 200k mirror specs the build should take at most 2x the time of pages of
# the same size (a quick check the benchmark prints)": specs and packages, as
# `--specs 200000 --packages 1600` would make them.
QUICK_CHECK = (200_000, 1_600)
MIRROR_TARGETS: dict[str, float] = {
    "dependency_name": 5.0,
    "depends_on_name": 5.0,
    "name_and_dependency": 5.0,
    "dependents_of_zlib": 5.0,
}


def mirror_phase(
    report: Report, specs: int, packages: int, seed: int, venv: Path = VENV, rounds: int = 1
) -> None:
    """The synthetic build cache of the same size: generated once (`demo-data --mirror`),
    indexed from its v3 mirror (views and spec manifests included), then asked about
    dependencies in-process, and served to measure the RSS. `venv` indexes and serves
    (another checkout's, run with that checkout's Python, for a before/after). Built
    `rounds` times, each build compared with pages of as many specs (`_pages_build`: built
    after it when `rounds` is over 1, else this run's pages build if it made one): the
    round of median ratio is reported, with every round's times."""
    folder, generated = _mirror(specs, packages, seed)
    if generated is not None:
        report.mirror["generate_seconds"] = generated
    out = WORK / f"index-mirror-{specs}-{packages}-seed{seed}"
    size = (specs, packages, seed)
    build, versus = _against_pages(report, folder, out, size, venv, rounds, fresh=rounds > 1)
    report.mirror["build"] = build
    report.mirror["vs_pages"] = versus
    store = IndexStore(out)
    settle()
    schema = build_schema()
    facets = f"facets {{ {SMALL_FACETS} }}"
    queries = {
        "dependency_name": f'{{ specs(query: "^zlib", first: 20) {{ totalCount '
        f"nodes {{ hash name }} {facets} }} }}",
        "depends_on_name": '{ specs(filter: { dependsOn: { package: { eq: "zlib" } } }, '
        f"first: 20) {{ totalCount nodes {{ hash name }} {facets} }} }}",
        "dependency_constrained": f'{{ specs(query: "^zlib@1.3.1", first: 20) {{ totalCount '
        f"nodes {{ hash name }} {facets} }} }}",
        "page100_dependencies": "{ specs(first: 100) { nodes { hash "
        "dependencies { name spec { name } } } } }",
        "name_and_dependency": '{ specs(query: "hdf5 ^openmpi@5", first: 20) { totalCount '
        "nodes { hash name } } }",
        "dependents_of_zlib": '{ specs(query: "zlib", first: 1) { nodes { hash '
        "dependents(first: 20) { totalCount nodes { hash name } } } } }",
    }
    report.mirror["in_process"] = {}
    # What the server runs: compiled plans to JSON bytes where the checkout has them.
    answer = getattr(schema, "answer_sync", None)
    for name, query in queries.items():
        first = schema.execute_sync(query, context_value=Context(store=store))
        if first.errors:
            raise RuntimeError(f"{name}: {first.errors}")

        def call(query: str = query) -> None:
            if answer is not None:
                answer(query, context=Context(store=store))
            else:
                schema.execute_sync(query, context_value=Context(store=store))

        report.mirror["in_process"][name] = {
            **quantiles(timed(call)),
            "answer": _summary(first.data),
        }
        log(f"mirror in-process {name}: {report.mirror['in_process'][name]}")
    store.close()
    url = f"http://127.0.0.1:{PORT}/graphql"
    with server(cachegql_command(out, 1, venv=venv), url) as (process, seconds):
        for query in queries.values():
            post(url, query)
        pids = [process.pid, *children(process.pid)]
        report.mirror["serving_rss_mb"] = max(rss_mb(pid) for pid in pids)
        # And at rest: an idle worker gives back what its queries freed (1 to 2 s after).
        time.sleep(REST_SECONDS)
        report.mirror["serving_rss_at_rest_mb"] = max(rss_mb(pid) for pid in pids)
        report.mirror["start_to_first_answer_s"] = round(seconds, 2)


def _mirror(specs: int, packages: int, seed: int) -> tuple[Path, float | None]:
    """The folder of the synthetic build cache of `specs` specs, generated once, and the
    seconds its generation took if it was generated now."""
    folder = WORK / f"mirror-{specs}-{packages}-seed{seed}"
    marker = folder / ".complete"
    if not marker.exists():
        shutil.rmtree(folder, ignore_errors=True)
        log(f"generating a build cache of {specs} specs into {folder}")
        started = time.perf_counter()
        run_cli(
            "demo-data",
            "--mirror",
            "--specs",
            str(specs),
            "--packages",
            str(packages),
            "--seed",
            str(seed),
            "--out",
            str(folder),
        )
        marker.touch()
        return folder, round(time.perf_counter() - started, 1)
    return folder, None


def _against_pages(
    report: Report,
    folder: Path,
    out: Path,
    size: tuple[int, int, int],
    venv: Path,
    rounds: int,
    fresh: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The build cache in `folder` indexed `rounds` times into `out`, each build compared
    with pages of as many specs (`size`: specs, packages, seed), built after it when
    `fresh` (else this run's pages build: `_pages_build`): the build of the round of
    median ratio (the lower of the two middle ones), and the comparison, every round's
    times with it. Ratios are of the unrounded times."""
    builds, ratios = [], []
    for round_ in range(rounds):
        log(f"indexing the build cache of {size[0]} specs (round {round_ + 1} of {rounds})")
        builds.append(measured_build(venv, [str(folder / "mirror"), "--tag", "develop"], out))
        log(f"mirror build: {builds[-1]}")
        pages_seconds = _pages_build(report, *size, venv, fresh=fresh)
        builds[-1]["pages_seconds"] = round(pages_seconds, 1)
        ratios.append(builds[-1]["wall_seconds"] / max(pages_seconds, 0.1))
        log(f"mirror build vs pages build: {builds[-1]['seconds']} s vs {pages_seconds:.1f} s")
    median = sorted(range(rounds), key=ratios.__getitem__)[(rounds - 1) // 2]
    return builds[median], {
        "specs": size[0],
        "seconds": builds[median]["seconds"],
        "pages_seconds": builds[median]["pages_seconds"],
        "ratio": round(ratios[median], 2),
        "rounds": [
            {"seconds": b["seconds"], "pages_seconds": b["pages_seconds"], "ratio": round(r, 2)}
            for b, r in zip(builds, ratios, strict=True)
        ],
    }


def quick_check(report: Report, seed: int, venv: Path = VENV, rounds: int = 3) -> None:
    """Issue 19's quick check: a build cache of `QUICK_CHECK` specs built in at most twice
    the time of pages of as many specs, `rounds` times each in turn (the median
    reported). Its own folders: those of `--specs 200000 --packages 1600` runs."""
    specs, packages = QUICK_CHECK
    folder, generated = _mirror(specs, packages, seed)
    out = WORK / f"index-mirror-{specs}-{packages}-seed{seed}"
    size = (specs, packages, seed)
    # Its pages are always built here: this run's pages build is of another size.
    _, versus = _against_pages(report, folder, out, size, venv, rounds, fresh=True)
    if generated is not None:
        versus["generate_seconds"] = generated
    report.mirror["quick_check"] = versus


def _pages_build(
    report: Report, specs: int, packages: int, seed: int, venv: Path, fresh: bool
) -> float:
    """Seconds to build pages of as many specs as the mirror (issue 19: the mirror at
    most 2x): this run's pages build, if it made one and not `fresh`, else one made here
    (the same synthetic pages as the pages phase, indexed by `venv`)."""
    seconds: float | None = report.build.get("wall_seconds")
    if seconds is not None and not fresh:
        return seconds
    source = pages({"specs": specs, "packages": packages, "seed": seed})
    log("indexing pages of the same size, to compare")
    built = measured_build(venv, [str(source)], WORK / f"index-{source.name}")
    return float(built["wall_seconds"])


def table(report: Report) -> str:
    lines = [
        f"cachegql benchmark: {report.config['specs']:,} specs, {report.config['packages']:,} "
        f"packages, {len(TAGS.split(','))} tags, on {report.machine['cpu']} "
        f"({report.machine['cores']} cores, {report.machine['memory_gib']} GiB), "
        f"Python {report.machine['python']}, {report.machine['date']}",
        "",
        "| measure | result | target |",
        "|---|---|---|",
    ]
    if "seconds" in report.build:
        lines.append(
            f"| index build | {report.build['seconds']} s, {report.build['size_mb']} MB on "
            f"disk, peak RSS {report.build['peak_rss_mb']} MB | <= 60 s |"
        )
    one = report.serving.get(_workers(1), {})
    if one:
        lines += [
            f"| serving RSS after load (1 worker) | {one['rss_after_load_mb'][0]} MB "
            f"(after the load tests: {one['rss_after_queries_mb'][0]} MB) | <= 600 MB |",
            f"| start to first answer | {one['start_to_first_answer_s']} s | <= 3 s |",
        ]
    for name, stats in report.in_process.items():
        kind, limit = TARGETS.get(name, ("", 0))
        target = f"<= {limit} ms" if kind else ""
        lines.append(
            f"| in-process `{name}` | median {stats['median_ms']} ms, p99 {stats['p99_ms']} ms | "
            f"{target} |"
        )
    for name in HTTP_QUERIES:
        runs = report.http.get(name, {})
        for key in sorted(runs):
            two = key.split("_")[1] == "2"
            rate = RATE_TARGETS.get((name, key.rpartition("_")[2])) if two else None
            target = f">= {rate:,.0f} req/s" if rate and key.startswith("cachegql") else ""
            lines.append(
                f"| HTTP `{name}` {key.replace('_', ' ')} | {_load_text(runs[key])} | {target} |"
            )
    lines += _floor_share_rows(report.http)
    for name, sides in report.peer.items():
        if not isinstance(sides, dict) or "datasette" not in sides or "cachegql" not in sides:
            continue
        ours, theirs = sides["cachegql"], sides["datasette"]
        if "sequential" not in ours or "sequential" not in theirs:
            lines.append(f"| vs datasette-graphql `{name}` | an error on one side | |")
            continue
        mine, peer_ms = ours["sequential"]["median_ms"], theirs["sequential"]["median_ms"]
        lines.append(
            f"| vs datasette-graphql `{name}`, one client | cachegql {mine} ms, datasette "
            f"{peer_ms} ms: {peer_ms / mine:.1f}x faster | ahead |"
        )
        if "load" in ours and "load" in theirs:
            rate, peer_rate = ours["load"]["rps"], theirs["load"]["rps"]
            lines.append(
                f"| vs datasette-graphql `{name}`, under load | cachegql {rate:,} req/s (p99 "
                f"{ours['load']['p99_ms']} ms), datasette {peer_rate:,} req/s (p99 "
                f"{theirs['load']['p99_ms']} ms): {rate / max(peer_rate, 0.1):.1f}x | ahead |"
            )
    lines += _mirror_rows(report.mirror)
    return "\n".join(lines)


def mirror_table(report: Report) -> str:
    return "\n".join(
        [
            f"cachegql build-cache benchmark: {report.config['specs']:,} specs on "
            f"{report.machine['cpu']} ({report.machine['cores']} cores, "
            f"{report.machine['memory_gib']} GiB), Python {report.machine['python']}, "
            f"{report.machine['date']}",
            "",
            "| measure | result | target |",
            "|---|---|---|",
            *_mirror_rows(report.mirror),
        ]
    )


def _mirror_rows(mirror: dict[str, Any]) -> list[str]:
    if not mirror:
        return []
    build = mirror["build"]
    helpers = [
        f"{mb} MB {what}"
        for mb, what in (
            (build.get("helper_peak_mb"), "in its manifest reader"),
            (build.get("writer_own_mb"), "of its own in a graph writer"),
        )
        if mb is not None
    ]
    reader = f" (and {', '.join(helpers)})" if helpers else ""
    rows = [
        f"| build-cache index build (v3 mirror, views, spec manifests) | {build['seconds']} s, "
        f"{build['size_mb']} MB on disk, peak RSS {build['peak_rss_mb']} MB{reader} "
        "| <= 60 s |",
        *_versus_pages_rows(mirror),
        f"| build-cache serving RSS (1 worker, after the queries) | {mirror['serving_rss_mb']} MB "
        f"right after, {mirror.get('serving_rss_at_rest_mb', '-')} MB at rest "
        f"{REST_SECONDS} s later | <= 400 MB (issue 19) |",
        f"| build-cache serve start to first answer | {mirror['start_to_first_answer_s']} s "
        "| <= 3 s |",
    ]
    for name, stats in mirror["in_process"].items():
        limit = MIRROR_TARGETS.get(name)
        rows.append(
            f"| in-process `{name}` | median {stats['median_ms']} ms, p99 {stats['p99_ms']} ms "
            f"| {f'<= {limit} ms' if limit else ''} |"
        )
    return rows


def _versus_pages_rows(mirror: dict[str, Any]) -> list[str]:
    rows = []
    check = mirror.get("quick_check", {})
    for versus, what in (
        (mirror.get("vs_pages"), "of as many specs"),
        (check, f"at {check.get('specs', 0):,} specs (issue 19's quick check)"),
    ):
        if not versus:  # a run without the quick check
            continue
        rounds = versus.get("rounds", [])
        each = "; rounds " + ", ".join(
            f"{r['seconds']} s vs {r['pages_seconds']} s ({r['ratio']}x)" for r in rounds
        )
        rows.append(
            f"| build-cache build vs pages build {what} "
            f"| {versus['ratio']}x ({versus['seconds']} s vs {versus['pages_seconds']} s"
            f"{each if len(rounds) > 1 else ''}) | <= 2x |"
        )
    return rows


def _load_text(run: dict[str, Any]) -> str:
    split = run.get("connections")
    per_worker = f", connections per worker {'/'.join(map(str, split))}" if split else ""
    rounds = run.get("rounds_rps", [])
    splits = run.get("rounds_connections") or [None] * len(rounds)
    texts = [
        f"{rps:,.0f}" + (f" ({'/'.join(map(str, split))})" if split else "")
        for rps, split in zip(rounds, splits, strict=True)
    ]
    each = f"; rounds {', '.join(texts)} req/s" if len(rounds) > 1 else ""
    return (
        f"{run['rps']:,} req/s, p50 {run['p50_ms']} ms, p99 {run['p99_ms']} ms "
        f"({run['requests']} requests, {run['errors']} errors{per_worker}{each})"
    )


def _floor_share_rows(http: dict[str, Any]) -> list[str]:
    """cachegql's rate as a share of the floor's, each round against the floor of the same
    round, the median (the lower of the two middle ones) given first (reports before stop
    61 have one round each)."""
    rows = []
    for name in HTTP_QUERIES:
        runs = http.get(name, {})
        floors = {key.split("_")[1] for key in runs if key.startswith("floor_")}
        for workers in sorted(floors, key=int):
            floor = runs[f"floor_{workers}_{_plural(workers)}"]
            shares, targets = [], []
            for cache in ("uncached", "cached"):
                mine = runs.get(f"cachegql_{workers}_{_plural(workers)}_{cache}")
                if mine is None:
                    continue
                each = [
                    rps / floor_rps
                    for rps, floor_rps in zip(_rounds(mine), _rounds(floor), strict=False)
                ]
                target = FLOOR_SHARE_TARGETS.get((name, cache)) if workers == "2" else None
                shares.append(
                    f"{cache} {statistics.median_low(each):.1%} "
                    f"({', '.join(f'{share:.1%}' for share in each)})"
                )
                if target:
                    targets.append(f"{cache} >= {target:.0%}")
            rows.append(
                f"| HTTP `{name}` {workers} {_plural(workers)} vs the floor, each round "
                f"| {'; '.join(shares)} | {', '.join(targets)} |"
            )
    return rows


def _plural(workers: str) -> str:
    return "worker" if workers == "1" else "workers"


def _rounds(run: dict[str, Any]) -> list[float]:
    rounds: list[float] = run.get("rounds_rps") or [run["rps"]]
    return rounds


def _count(text: str) -> int:
    """A number of rounds: 1 or more."""
    count = int(text)
    if count < 1:
        raise argparse.ArgumentTypeError(f"at least 1 round, not {count}")
    return count


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--specs", type=int, default=1_000_000)
    parser.add_argument("--packages", type=int, default=8000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--quick", action="store_true", help="100k specs and 5 s loads: a smoke run"
    )
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--max-requests", type=int, default=100_000)
    parser.add_argument(
        "--rounds",
        type=_count,
        default=3,
        help="rounds of the HTTP loads, each of every server in turn (the median reported)",
    )
    parser.add_argument(
        "--index", type=Path, help="serve and query this index (no pages made, no build)"
    )
    parser.add_argument(
        "--server-venv",
        type=Path,
        default=VENV.parent,
        help="the virtualenv whose cachegql serves the HTTP loads (another checkout's, to "
        "compare it in the same sitting); the floor always runs from .venv",
    )
    parser.add_argument(
        "--build-rounds",
        type=_count,
        default=1,
        help="rounds of the build-cache build; with more than one, each is followed by a "
        "pages build of as many specs (else the pages phase's build is compared), and the "
        "round of median ratio is reported",
    )
    parser.add_argument(
        "--check-rounds",
        type=int,
        default=3,
        help=f"rounds of issue 19's quick check after the build-cache phase: a build cache of "
        f"{QUICK_CHECK[0]:,} specs against pages of as many, each in turn, the median "
        "reported (0: none; none either when --specs is that many or fewer)",
    )
    parser.add_argument("--workers", default="1,2", help="worker counts of the HTTP loads")
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--skip-mirror", action="store_true", help="no build-cache phase")
    parser.add_argument(
        "--only-mirror", action="store_true", help="only the build-cache phase (no pages)"
    )
    parser.add_argument(
        "--mirror-venv",
        type=Path,
        default=VENV.parent,
        help="the virtualenv whose cachegql indexes and serves the build cache (run this "
        "script with its Python to measure that checkout in process too)",
    )
    args = parser.parse_args()
    if args.quick:
        args.specs, args.packages, args.duration = 100_000, 1500, 5.0
    WORK.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    config = {
        "specs": args.specs,
        "packages": args.packages,
        "seed": args.seed,
        "tags": TAGS,
        "concurrency": args.concurrency,
        "duration_s": args.duration,
        "rounds": args.rounds,
        "build_rounds": args.build_rounds,
    }
    report = Report(machine=machine(), config=config)
    if not args.only_mirror:
        if args.index is not None:
            source, index = args.index, args.index
            report.build = {"given": str(args.index)}
        else:
            source = pages(config)
            index = build(source, report)
        config["server_venv"] = str(args.server_venv)
        queries = in_process(index, report)
        if not args.skip_http:
            serving(index, queries, args, report)
        if not args.skip_peer and args.index is None:
            peer(index, source, report.config["parameters"], args, report)
    if not args.skip_mirror:
        mirror_phase(
            report,
            args.specs,
            args.packages,
            args.seed,
            args.mirror_venv / "bin",
            args.build_rounds,
        )
        if args.check_rounds > 0 and args.specs > QUICK_CHECK[0]:
            quick_check(report, args.seed, args.mirror_venv / "bin", args.check_rounds)
    text = mirror_table(report) if args.only_mirror else table(report)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (RESULTS / f"bench-{stamp}.json").write_text(json.dumps(report.__dict__, indent=1) + "\n")
    (RESULTS / f"bench-{stamp}.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
