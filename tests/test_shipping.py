"""Builds shipped through S3 and pulled by replicas, against moto's real S3 server.

moto's standalone server runs on 127.0.0.1 in this process (a real HTTP server that
boto3, and the `cachegql` processes the tests start, talk to over the network).
The fleet test runs two `cachegql serve --index s3://...` replicas while a third
process publishes three builds, a client asking both all along.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from cachegql.index import IndexStore, build_index
from cachegql.server.shipping import (
    POINTER,
    Pointer,
    Puller,
    ShippingError,
    Store,
    pulled,
    ship,
)
from tests.conftest import CLI, PAGES
from tests.remote_servers import MotoServer, free_port

BUCKET = "cachegql-builds"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """moto's S3 server on 127.0.0.1 with an empty bucket; its endpoint URL."""
    server = MotoServer(tmp_path_factory.mktemp("moto"))
    saved = {key: os.environ.get(key) for key in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    try:
        boto3.client("s3", endpoint_url=server.endpoint).create_bucket(Bucket=BUCKET)
        yield server.endpoint
    finally:
        server.close()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def store(s3: str, request: pytest.FixtureRequest) -> Store:
    return Store(f"s3://{BUCKET}/{request.node.name}", s3)


def _build(tmp_path: Path, name: str = "ix", sources: tuple[Path, ...] = (PAGES,)) -> Path:
    return build_index(list(sources), tmp_path / name).folder


def test_a_shipped_build_is_pulled_whole_and_serves_the_same_answers(
    tmp_path: Path, store: Store
) -> None:
    build = _build(tmp_path)
    pointer = ship(build, store)
    assert pointer.build_id == build.name
    assert Pointer.from_json(store.get(POINTER), "pointer") == pointer
    puller = Puller(store, tmp_path / "replica" / "index")
    assert puller.pull() is True
    assert puller.pull() is False  # the same build: nothing fetched
    assert IndexStore(puller.out).build_id == build.name  # loads: verified whole
    for name in [p.relative_to(build) for p in build.rglob("*") if p.is_file()]:
        assert (puller.out / name).read_bytes() == (build / name).read_bytes()


def test_a_damaged_file_in_the_store_is_refused_and_the_served_build_stays(
    tmp_path: Path, store: Store
) -> None:
    first = _build(tmp_path, "one")
    ship(first, store)
    puller = Puller(store, tmp_path / "replica" / "index")
    puller.pull()
    second = _build(tmp_path, "two")
    ship(second, store)
    victim = sorted(path.name for path in (second / "tags" / "0").iterdir())[0]
    store.put(b"damaged", "builds", second.name, "tags", "0", victim)
    with pytest.raises(ShippingError, match=f"tags/0/{victim}: 7 bytes .*the build is not used"):
        puller.pull()
    assert IndexStore(puller.out).build_id == first.name
    assert not list((puller.out.parent / "index.builds").glob("*.partial"))


def test_a_pointer_to_a_manifest_that_changed_is_refused(tmp_path: Path, store: Store) -> None:
    build = _build(tmp_path)
    ship(build, store)
    store.put(b'{"files": {}}', "builds", build.name, "manifest.json")
    with pytest.raises(ShippingError, match="checksum differs from the pointer's"):
        Puller(store, tmp_path / "replica" / "index").pull()


def test_a_manifest_naming_a_file_outside_the_build_is_refused(
    tmp_path: Path, store: Store
) -> None:
    manifest = b'{"files": {"../../escape": {"size": 1, "sha256": "00"}}}'
    store.put(manifest, "builds", "b1", "manifest.json")
    store.put(Pointer("b1", _sha(manifest), 1, 1).to_json(), POINTER)
    with pytest.raises(ShippingError, match=re.escape("lists '../../escape'")):
        Puller(store, tmp_path / "replica" / "index").pull()
    assert not (tmp_path / "escape").exists()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_an_empty_or_missing_store_and_a_bad_url_are_named(s3: str, tmp_path: Path) -> None:
    empty = Store(f"s3://{BUCKET}/nothing-here", s3)
    with pytest.raises(ShippingError, match=rf"s3://{BUCKET}/nothing-here/current.json: not found"):
        Puller(empty, tmp_path / "index").pull()
    with pytest.raises(ShippingError, match="not found"):
        Puller(Store("s3://no-such-bucket-here/x", s3), tmp_path / "index").pull()
    with pytest.raises(ShippingError, match="not an s3://BUCKET/PREFIX URL"):
        Store("s3:///x", s3)
    store = Store(f"s3://{BUCKET}/pointer-garbage", s3)
    store.put(b"{}", POINTER)
    with pytest.raises(ShippingError, match="not a cachegql build pointer"):
        Puller(store, tmp_path / "index").pull()


def test_an_unreachable_store_is_logged_and_the_puller_goes_on(
    tmp_path: Path, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    ship(_build(tmp_path), store)
    puller = Puller(store, tmp_path / "replica" / "index")
    puller.pull()
    puller.store = Store(f"s3://{BUCKET}/x", f"http://127.0.0.1:{free_port()}")
    thread = puller.start(0.05)
    time.sleep(0.5)
    puller.stop()
    thread.join(5)
    assert "Could not connect to the endpoint URL" in caplog.text
    assert "still serving build" in caplog.text
    assert IndexStore(puller.out).build_id == puller.current


# The command line, and a fleet of two replicas.


def _env(s3: str, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "COVERAGE_PROCESS_CONFIG"}
    return env | CREDENTIALS | {"CACHEGQL_CACHE_DIR": str(cache), "AWS_ENDPOINT_URL_S3": s3}


def _publish(tmp_path: Path, s3: str, prefix: str, specs: int, seed: int) -> str:
    pages = tmp_path / f"pages-{seed}"
    subprocess.run(
        [
            CLI,
            "demo-data",
            "--specs",
            str(specs),
            "--packages",
            "20",
            "--seed",
            str(seed),
            "--out",
            str(pages),
        ],
        check=True,
        capture_output=True,
    )
    run = subprocess.run(
        [
            CLI,
            "index",
            str(pages),
            "--out",
            str(tmp_path / "ix"),
            "-q",
            "--publish",
            f"s3://{BUCKET}/{prefix}",
        ],
        capture_output=True,
        text=True,
        env=_env(s3, tmp_path / "publisher-cache"),
    )
    assert run.returncode == 0, run.stderr
    assert f"to s3://{BUCKET}/{prefix} (" in run.stdout
    return (tmp_path / "ix").resolve().name


def test_publish_names_an_unreachable_store_and_keeps_the_local_build(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            CLI,
            "index",
            str(PAGES),
            "--out",
            str(tmp_path / "ix"),
            "-q",
            "--publish",
            f"s3://{BUCKET}/x",
            "--s3-endpoint-url",
            f"http://127.0.0.1:{free_port()}",
        ],
        capture_output=True,
        text=True,
        env=_env("http://127.0.0.1:9", tmp_path / "cache"),
    )
    assert run.returncode == 1
    assert "Could not connect" in run.stderr
    assert "the build is published at --out, not shipped" in run.stderr
    assert (tmp_path / "ix" / "manifest.json").is_file()


def test_serve_refuses_a_store_without_a_build(s3: str, tmp_path: Path) -> None:
    run = subprocess.run(
        [CLI, "serve", "--index", f"s3://{BUCKET}/empty-prefix", "--port", str(free_port())],
        capture_output=True,
        text=True,
        env=_env(s3, tmp_path / "cache"),
        timeout=60,
    )
    assert run.returncode == 1
    assert f"error: s3://{BUCKET}/empty-prefix/current.json: not found" in run.stderr


class Replica:
    def __init__(self, s3: str, prefix: str, folder: Path) -> None:
        self.port = free_port()
        self.log = folder / f"replica-{self.port}.log"
        self._log_file = self.log.open("w")
        self.process = subprocess.Popen(
            [
                CLI,
                "serve",
                "--index",
                f"s3://{BUCKET}/{prefix}",
                "--port",
                str(self.port),
                "--reload-interval",
                "0.5",
                "--no-access-log",
            ],
            env=_env(s3, folder / f"cache-{self.port}"),
            stdout=subprocess.DEVNULL,
            stderr=self._log_file,
        )
        self.url = f"http://127.0.0.1:{self.port}"

    def build(self, client: httpx.Client) -> str | None:
        try:
            answer = client.get(f"{self.url}/readyz")
        except httpx.TransportError:
            return None
        return str(answer.json()["build"]) if answer.status_code == 200 else None

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
        self._log_file.close()


QUERY = "{ packages(first: 3) { totalCount nodes { name } } }"


def test_two_replicas_follow_three_publishes_without_a_failed_request(
    s3: str, tmp_path: Path
) -> None:
    prefix = "fleet"
    first = _publish(tmp_path, s3, prefix, 200, 1)
    replicas = [Replica(s3, prefix, tmp_path), Replica(s3, prefix, tmp_path)]
    failures: list[str] = []
    answered = 0
    stop = threading.Event()

    def ask() -> None:
        nonlocal answered
        with httpx.Client(timeout=10) as client:
            while not stop.is_set():
                for replica in replicas:
                    answer = client.post(f"{replica.url}/graphql", json={"query": QUERY})
                    body: dict[str, Any] = answer.json()
                    if answer.status_code != 200 or "errors" in body:
                        failures.append(f"{replica.port}: {answer.status_code} {body}")
                    answered += 1

    try:
        with httpx.Client(timeout=5) as client:
            _until(lambda: all(r.build(client) == first for r in replicas), 60, replicas)
            asker = threading.Thread(target=ask)
            asker.start()
            builds = [first]
            for seed in (2, 3, 4):
                builds.append(_publish(tmp_path, s3, prefix, 200 + 100 * seed, seed))
                published = time.monotonic()
                _until(lambda: all(r.build(client) == builds[-1] for r in replicas), 30, replicas)
                converged = time.monotonic() - published
                assert converged < 10, f"replicas took {converged:.1f} s to move"
            stop.set()
            asker.join(30)
    finally:
        stop.set()
        for replica in replicas:
            replica.stop()
    assert not failures, failures[:3]
    assert answered > 20
    assert len(set(builds)) == 4


def _until(condition: Any, seconds: float, replicas: list[Replica]) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            logs = "\n".join(r.log.read_text()[-2000:] for r in replicas)
            pytest.fail(f"not within {seconds} s; replica logs:\n{logs}")
        time.sleep(0.1)


def test_a_replica_pulls_into_its_cache_folder(
    s3: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = "tidy"
    _publish(tmp_path, s3, prefix, 100, 5)
    monkeypatch.setenv("CACHEGQL_CACHE_DIR", str(tmp_path / "cache"))
    out, puller = pulled(f"s3://{BUCKET}/{prefix}", s3)
    assert out.is_relative_to(tmp_path / "cache" / "cachegql" / "shipped")
    assert IndexStore(out).build_id == puller.current
