"""Indexing the same build cache from each kind of source: a folder, http, S3 and OCI.

Run from the repository root: `.venv/bin/python bench/sources.py [--specs 100000]`.
Writes a demo mirror (`cachegql demo-data --mirror`: a v2 mirror per stack and their
listing), serves it from 127.0.0.1 over http (tests/http_fixture.py), from moto's S3
server and from Debian's docker-registry (tests/remote_servers.py), then times
`cachegql index` of the listing from each: cold (an empty download cache) and warm (the
same cache again: ETags, digests and checksums revalidate, nothing is downloaded). The
S3 bucket holds only what indexing reads (the listing and each stack's index and hash),
not the v3 mirror's spec manifests. Work files are kept in bench/work/ by `--specs`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import boto3

from cachegql.demo import MirrorConfig, MirrorSummary, write_mirror
from cachegql.index import build_index
from cachegql.server.oci import OciReader
from cachegql.server.push import push_oci
from cachegql.server.remote import RemoteOptions, RemoteReader

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' servers
from tests.http_fixture import MirrorHTTPServer  # noqa: E402
from tests.remote_servers import MotoServer, Registry  # noqa: E402

WORK = ROOT / "bench" / "work"


def mirror(specs: int) -> tuple[Path, MirrorSummary]:
    out = WORK / f"sources-{specs}"
    config = MirrorConfig(specs=specs, packages=max(50, specs // 50), stacks=10, seed=1)
    if out.exists():
        shutil.rmtree(out)
    started = time.perf_counter()
    summary = write_mirror(config, out)
    print(f"wrote {specs} specs in {time.perf_counter() - started:.1f} s", flush=True)
    return out, summary


def upload_indexes(out: Path, endpoint: str) -> str:
    client = boto3.session.Session().client("s3", endpoint_url=endpoint)
    client.create_bucket(Bucket="bench")
    for path in [out / "cache_spack_io_index.json", *sorted((out / "stacks").rglob("index.*"))]:
        key = f"mirror/{path.relative_to(out).as_posix()}"
        client.put_object(Bucket="bench", Key=key, Body=path.read_bytes())
    return "s3://bench/mirror/cache_spack_io_index.json"


def index(source: str, cache: Path, endpoint: str, out: Path) -> tuple[float, int, int]:
    """Seconds, specs and bytes downloaded of one `cachegql index` of `source`."""
    options = RemoteOptions(cache, s3_endpoint_url=endpoint)
    with RemoteReader(options) as reader:
        started = time.perf_counter()
        report = build_index([source], out, reader=reader)
        seconds = time.perf_counter() - started
        return seconds, report.specs, reader.downloaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=100_000)
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    out, summary = mirror(args.specs)
    stacks = [label for label, _ in summary.stacks]
    with tempfile.TemporaryDirectory(dir=WORK) as scratch_name:
        scratch = Path(scratch_name)
        registry = Registry(scratch / "registry")
        moto = MotoServer(scratch / "moto")
        try:
            with MirrorHTTPServer(out) as http:
                with OciReader(None) as pusher:
                    oci_listing = push_oci(pusher, out, registry.url("bench"), stacks, "develop")
                sources = {
                    "folder": str(out / "cache_spack_io_index.json"),
                    "http": http.url_for("cache_spack_io_index.json"),
                    "s3": upload_indexes(out, moto.endpoint),
                    "oci": str(oci_listing),
                }
                print(f"{'source':8} {'specs':>8} {'cold s':>8} {'warm s':>8} {'cold MB':>8}")
                for kind, source in sources.items():
                    cache = scratch / f"cache-{kind}"
                    cold, specs, got = index(source, cache, moto.endpoint, scratch / kind)
                    warm, _, again = index(source, cache, moto.endpoint, scratch / kind)
                    assert again == 0, f"{kind}: {again} bytes downloaded again"
                    print(f"{kind:8} {specs:8} {cold:8.2f} {warm:8.2f} {got / 1e6:8.1f}")
        finally:
            moto.close()
            registry.close()
    print(f"uptime: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
