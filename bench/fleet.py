"""A fleet on one machine: builds shipped through S3 to replicas, and what it costs.

    .venv/bin/python bench/fleet.py --specs 100000 --replicas 2

Run it with the project's venv (it starts moto's S3 server, a dev dependency, in this
process, on 127.0.0.1). It generates `--specs` demo specs, indexes and ships them
(`cachegql index --publish s3://...`), starts `--replicas` replicas (`cachegql serve
--index s3://... --workers 1 --reload-interval R`) and times each to ready (first pull,
verification and load) and reads its memory; then ships a second build of the same size
and times from the end of the publish to every replica answering with it. Prints a
markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import httpx
from moto.server import ThreadedMotoServer

CLI = str(Path(sys.executable).with_name("cachegql"))
BUCKET = "cachegql-fleet"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def s3() -> Iterator[str]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.stop()


def publish(work: Path, specs: int, seed: int) -> tuple[str, float, str]:
    """Generate, index and ship; the build id, the seconds of the ship, its line."""
    pages = work / f"pages-{seed}"
    if not pages.is_dir():
        subprocess.run(
            [CLI, "demo-data", "--specs", str(specs), "--seed", str(seed), "--out", str(pages)],
            check=True,
            capture_output=True,
        )
    run = subprocess.run(
        [
            CLI,
            "index",
            str(pages),
            "--out",
            str(work / "ix"),
            "-q",
            "--publish",
            f"s3://{BUCKET}/fleet",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    shipped = run.stdout.strip().splitlines()[-1]
    seconds = float(re.search(r"in ([\d.]+) s$", shipped).group(1))  # type: ignore[union-attr]
    return (work / "ix").resolve().name, seconds, shipped


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def build_of(url: str) -> str | None:
    with contextlib.suppress(httpx.HTTPError):
        answer = httpx.get(f"{url}/readyz", timeout=2)
        if answer.status_code == 200:
            return str(answer.json()["build"])
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specs", type=int, default=100_000)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--reload-interval", type=float, default=2.0)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="fleet-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
    )
    rows = []
    with s3() as endpoint:
        os.environ["AWS_ENDPOINT_URL_S3"] = endpoint
        first, shipped_s, line = publish(work, args.specs, 1)
        rows.append(("ship a build (upload and pointer)", f"{shipped_s:.1f} s", line))
        replicas = []
        for number in range(args.replicas):
            port = free_port()
            env = os.environ | {"CACHEGQL_CACHE_DIR": str(work / f"replica-{number}")}
            started = time.monotonic()
            process = subprocess.Popen(
                [
                    *(CLI, "serve", "--index", f"s3://{BUCKET}/fleet", "--port", str(port)),
                    *("--reload-interval", str(args.reload_interval), "--no-access-log"),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            url = f"http://127.0.0.1:{port}"
            while build_of(url) != first:
                if process.poll() is not None or time.monotonic() - started > 300:
                    raise SystemExit("a replica did not start")
                time.sleep(0.05)
            ready = time.monotonic() - started
            replicas.append((process, url))
            rows.append(
                (
                    f"replica {number + 1}: start to ready (pull, verify, load)",
                    f"{ready:.1f} s",
                    f"RSS {rss_mb(process.pid):.0f} MB (1 worker)",
                )
            )
        try:
            second, shipped_s, line = publish(work, args.specs, 2)
            shipped_at = time.monotonic()
            moved = {}
            while len(moved) < len(replicas):
                for _, url in replicas:
                    if url not in moved and build_of(url) == second:
                        moved[url] = time.monotonic() - shipped_at
                if time.monotonic() - shipped_at > 300:
                    raise SystemExit("the replicas did not move")
                time.sleep(0.05)
            rows.append(
                (
                    "ship the next build",
                    f"{shipped_s:.1f} s",
                    line,
                )
            )
            rows.append(
                (
                    f"then every replica serving it (reload interval {args.reload_interval:g} s)",
                    f"{max(moved.values()):.1f} s",
                    ", ".join(f"{v:.1f} s" for v in moved.values()),
                )
            )
            for number, (process, _) in enumerate(replicas):
                rows.append(
                    (
                        f"replica {number + 1} after the swap",
                        "",
                        f"RSS {rss_mb(process.pid):.0f} MB",
                    )
                )
        finally:
            for process, _ in replicas:
                process.terminate()
                process.wait(30)
    print(f"{args.specs:,} specs, {args.replicas} replicas, moto's S3 on 127.0.0.1\n")
    print("| step | time | detail |\n|---|---|---|")
    for step, seconds, detail in rows:
        print(f"| {step} | {seconds} | {detail} |")


if __name__ == "__main__":
    main()
