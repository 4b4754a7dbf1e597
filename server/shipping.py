"""Builds shipped through an S3 bucket: published once, pulled by every replica.

Layout under `s3://BUCKET/PREFIX/`: `builds/<build id>/<file>` for every file of a build
(its `manifest.json` last), then `current.json`, the pointer, moved only once the whole
build is there. A reader therefore never finds a pointer to half a build.

`ship` uploads a published build and moves the pointer. `Puller` keeps a local index
folder (published as `cachegql index --out` publishes one) on the pointer's build:
each file is downloaded beside the others, checked against the manifest's size and
sha256 while it streams, and the build is published locally only when every file
matched. An unreachable store or a damaged build is logged in one line and the build
being served stays; the server's reload (server/holder.py) then moves to the new build
as it does for a local rebuild. Credentials come from boto3's chain (environment,
profile, instance role); `endpoint_url` (or `AWS_ENDPOINT_URL_S3`) names an S3-compatible
store (MinIO, Ceph, R2); a public bucket is read anonymously when no credential exists.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from botocore.exceptions import BotoCoreError, ClientError

from cachegql.index import PublishError, received
from cachegql.server.s3 import s3_client, split_s3_url

__all__ = ["POINTER", "Pointer", "Puller", "ShippingError", "Store", "pulled", "ship"]

logger = logging.getLogger("cachegql.server")

POINTER = "current.json"
TRANSFERS = 8  # files in flight when shipping or pulling a build
MANIFEST = "manifest.json"
_CHUNK = 1 << 20


class ShippingError(Exception):
    """The store cannot be read or written, or holds a damaged build; names which."""


@dataclass(frozen=True)
class Pointer:
    """What `current.json` says: the build to serve and its manifest's checksum."""

    build_id: str
    manifest_sha256: str
    files: int
    size: int

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "build": self.build_id,
                "manifest_sha256": self.manifest_sha256,
                "files": self.files,
                "bytes": self.size,
            }
        )

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Pointer:
        try:
            document = orjson.loads(data)
            return cls(
                str(document["build"]),
                str(document["manifest_sha256"]),
                int(document["files"]),
                int(document["bytes"]),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ShippingError(f"{where}: not a cachegql build pointer ({exc!r})") from None


class Store:
    """`s3://BUCKET/PREFIX`: where builds are shipped."""

    def __init__(self, url: str, endpoint_url: str | None = None) -> None:
        bucket, prefix = split_s3_url(url)
        if not url.startswith("s3://") or not bucket:
            raise ShippingError(f"{url}: not an s3://BUCKET/PREFIX URL")
        self.url = url.rstrip("/")
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client: Any
        self.client, self.credential = s3_client(endpoint_url, retries=2)

    def key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def where(self, *parts: str) -> str:
        return f"s3://{self.bucket}/{self.key(*parts)}"

    def get(self, *parts: str) -> bytes:
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=self.key(*parts))
            return bytes(answer["Body"].read())
        except (ClientError, BotoCoreError) as exc:
            raise self._error(exc, *parts) from None

    def put(self, data: bytes, *parts: str) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=self.key(*parts), Body=data)
        except (ClientError, BotoCoreError) as exc:
            raise self._error(exc, *parts) from None

    def stream(self, *parts: str) -> Any:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self.key(*parts))["Body"]
        except (ClientError, BotoCoreError) as exc:
            raise self._error(exc, *parts) from None

    def _error(self, exc: Exception, *parts: str) -> ShippingError:
        where = self.where(*parts)
        if isinstance(exc, ClientError):
            code = exc.response.get("Error", {}).get("Code", "?")
            if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
                return ShippingError(f"{where}: access denied ({code}) with {self.credential}")
            if code in ("NoSuchKey", "404", "NoSuchBucket"):
                return ShippingError(f"{where}: not found ({code})")
            return ShippingError(f"{where}: {code}")
        return ShippingError(f"{where}: {exc}")


def ship(build: Path, store: Store) -> Pointer:
    """Upload the published build folder `build`, then point the store at it."""
    manifest = (build / MANIFEST).read_bytes()
    listed = orjson.loads(manifest)["files"]

    def upload(name: str) -> int:
        data = (build / name).read_bytes()
        store.put(data, "builds", build.name, name)
        return len(data)

    with ThreadPoolExecutor(TRANSFERS) as pool:  # a round trip per object: overlap them
        size = sum(pool.map(upload, sorted(listed)))
    store.put(manifest, "builds", build.name, MANIFEST)
    pointer = Pointer(build.name, hashlib.sha256(manifest).hexdigest(), len(listed) + 1, size)
    store.put(pointer.to_json(), POINTER)
    return pointer


class Puller:
    """Keeps the local index folder `out` on the build the store points to."""

    def __init__(self, store: Store, out: Path) -> None:
        self.store = store
        self.out = out
        self.current: str | None = None
        self._stop = threading.Event()

    def pull(self) -> bool:
        """Fetch the pointed-to build if it is not the one here; True if one was published.

        Raises ShippingError when the store cannot be read or the build is damaged.
        """
        pointer = Pointer.from_json(self.store.get(POINTER), self.store.where(POINTER))
        if pointer.build_id == self.current or self._published() == pointer.build_id:
            self.current = pointer.build_id
            return False
        started = time.monotonic()
        with received(self.out, pointer.build_id, lock_timeout=60) as folder:
            self._download(pointer, folder)
        self.current = pointer.build_id
        logger.info(
            "pulled build %s from %s (%d files, %.1f MB) in %.1f s",
            pointer.build_id,
            self.store.url,
            pointer.files,
            pointer.size / 1e6,
            time.monotonic() - started,
        )
        return True

    def run(self, interval: float) -> None:
        """Pull every `interval` seconds until stopped; failures are logged, not raised."""
        while not self._stop.wait(interval):
            try:
                self.pull()
            except (ShippingError, PublishError, OSError) as exc:
                logger.error("%s; still serving build %s", exc, self.current)

    def start(self, interval: float) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(interval,), name="puller", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self._stop.set()

    def _published(self) -> str | None:
        """The build id of the build published here, if any."""
        try:
            return str(orjson.loads((self.out / MANIFEST).read_bytes())["build_id"])
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
            return None

    def _download(self, pointer: Pointer, folder: Path) -> None:
        build = ("builds", pointer.build_id)
        manifest = self.store.get(*build, MANIFEST)
        if hashlib.sha256(manifest).hexdigest() != pointer.manifest_sha256:
            raise ShippingError(
                f"{self.store.where(*build, MANIFEST)}: checksum differs from the pointer's; "
                "a damaged or half-replaced build"
            )
        files = orjson.loads(manifest)["files"]
        for name in files:
            if Path(name).is_absolute() or ".." in Path(name).parts:
                raise ShippingError(f"{self.store.where(*build, MANIFEST)}: lists {name!r}")
            (folder / name).parent.mkdir(parents=True, exist_ok=True)

        def fetch(name: str) -> None:
            where = self.store.where(*build, name)
            self._fetch(where, build, name, files[name], folder / name)

        with ThreadPoolExecutor(TRANSFERS) as pool:
            list(pool.map(fetch, sorted(files)))  # the first failure is raised here
        (folder / MANIFEST).write_bytes(manifest)

    def _fetch(
        self, where: str, build: tuple[str, str], name: str, entry: dict[str, Any], target: Path
    ) -> None:
        digest = hashlib.sha256()
        size = 0
        body = self.store.stream(*build, name)
        with target.open("wb") as file:
            while chunk := body.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                if size > entry["size"]:
                    break
                file.write(chunk)
        if size != entry["size"] or digest.hexdigest() != entry["sha256"]:
            raise ShippingError(
                f"{where}: {size:,} bytes with sha256 {digest.hexdigest()[:12]}..., the manifest "
                f"lists {entry['size']:,} bytes with {str(entry['sha256'])[:12]}...; "
                "the build is not used"
            )


def pulled(url: str, endpoint_url: str | None = None) -> tuple[Path, Puller]:
    """The local index folder of the store at `url`, on its newest build (pulled now
    if it is not there yet), and the puller that keeps it so."""
    from cachegql.server.cache_home import cache_folder

    store = Store(url, endpoint_url)
    name = hashlib.sha256(store.url.encode()).hexdigest()[:16]
    puller = Puller(store, cache_folder() / "shipped" / name / "index")
    puller.pull()
    return puller.out, puller
