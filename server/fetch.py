"""Reading remote sources for `cachegql index`: the index's `Reader` over HTTP.

Timeouts and retries of transient failures (connection errors, timeouts, 429 and 5xx);
a cache on disk so that re-indexing an unchanged mirror downloads next to nothing:
bodies are revalidated with their ETag (`If-None-Match`, 304), and blobs whose checksum
is known in advance (a v2 index given by its `.hash`, a v3 blob named by its checksum)
are not requested at all when a copy with that checksum is cached.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from cachegql.index import NotFoundError, ReadError

__all__ = ["HttpReader"]

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
CHUNK = 1 << 16
Progress = Callable[[int, int], None]


class HttpReader:
    """Reads http(s) URLs; every failure is a ReadError naming the URL and the status."""

    def __init__(
        self,
        cache: Path | None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        progress: Callable[[str], Progress] | None = None,
    ) -> None:
        self.cache = cache
        self.retries = retries
        self.backoff = backoff
        self.progress = progress
        self.client = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            follow_redirects=True,
            headers={"user-agent": "cachegql"},
        )
        self.downloaded = 0  # bytes received, for the summary and for tests

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> HttpReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def read(self, url: str) -> bytes:
        entry = self._entry(url)
        etag = _read_text(entry.with_suffix(".etag")) if entry else None
        body = self._get(url, etag)
        if body is None and entry is not None:  # 304: the cached copy is current
            return entry.with_suffix(".body").read_bytes()
        assert body is not None
        return body

    def read_verified(self, url: str, sha256: str) -> bytes:
        blob = self._blob(sha256)
        if blob is not None and blob.is_file():
            data = blob.read_bytes()
            if hashlib.sha256(data).hexdigest() == sha256.lower():
                return data
        data = self.read(url)
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256.lower():
            raise ReadError(f"{url}: checksum mismatch: expected sha256 {sha256}, got {actual}")
        if blob is not None:
            _write(blob, data)
        return data

    def _get(self, url: str, etag: str | None) -> bytes | None:
        """The body at `url`, or None for a 304 to `etag`; retries transient failures."""
        headers = {"if-none-match": etag} if etag else {}
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                with self.client.stream("GET", url, headers=headers) as response:
                    if response.status_code == 304 and etag:
                        return None
                    if response.status_code == 404:
                        raise NotFoundError(f"{url}: HTTP 404 Not Found")
                    if response.status_code in RETRIED_STATUSES and not last:
                        self._pause(attempt)
                        continue
                    if response.status_code != 200:
                        raise ReadError(
                            f"{url}: HTTP {response.status_code} {response.reason_phrase}"
                            + (f" (after {attempt + 1} attempts)" if attempt else "")
                        )
                    body = self._body(url, response)
            except httpx.TimeoutException as exc:
                if last:
                    raise ReadError(
                        f"{url}: timed out ({type(exc).__name__}) after {attempt + 1} attempts"
                    ) from None
                self._pause(attempt)
                continue
            except httpx.TransportError as exc:
                if last:
                    raise ReadError(f"{url}: cannot connect ({exc})") from None
                self._pause(attempt)
                continue
            self._remember(url, response.headers.get("etag"), body)
            return body
        raise ReadError(f"{url}: no answer")  # not reached: the last attempt returns or raises

    def _body(self, url: str, response: httpx.Response) -> bytes:
        total = int(response.headers.get("content-length") or 0)
        show = self.progress(url.rsplit("/", 1)[-1] or url) if self.progress else None
        chunks, received = [], 0
        for chunk in response.iter_bytes(CHUNK):
            chunks.append(chunk)
            received += len(chunk)
            if show is not None:
                show(received, max(total, received))
        if show is not None:
            show(received, received)
        self.downloaded += received
        return b"".join(chunks)

    def _pause(self, attempt: int) -> None:
        time.sleep(self.backoff * (2**attempt))

    def _entry(self, url: str) -> Path | None:
        if self.cache is None:
            return None
        entry = self.cache / "urls" / hashlib.sha256(url.encode()).hexdigest()
        return entry if entry.with_suffix(".body").is_file() else None

    def _remember(self, url: str, etag: str | None, body: bytes) -> None:
        if self.cache is None or not etag:
            return
        entry = self.cache / "urls" / hashlib.sha256(url.encode()).hexdigest()
        _write(entry.with_suffix(".body"), body)
        _write(entry.with_suffix(".etag"), etag.encode())

    def _blob(self, sha256: str) -> Path | None:
        if self.cache is None or len(sha256) != 64:
            return None
        return self.cache / "blobs" / sha256.lower()


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _write(path: Path, data: bytes) -> None:
    """Write atomically, so that an interrupted run never leaves a torn cache entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_bytes(data)
    partial.replace(path)
