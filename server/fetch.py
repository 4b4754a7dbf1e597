"""Reading remote sources for `cachegql index`: the index's `Reader` over HTTP.

Timeouts and retries of transient failures (connection errors, timeouts, 429 and 5xx);
every read within the source limits (index/ingest/limits.py: body size after
decompression, expansion ratio, total time, redirects, reads in flight), redirects
followed by hand so that none leads off the network or from https to http; a cache on
disk so that re-indexing an unchanged mirror downloads next to nothing:
bodies are revalidated with their ETag (`If-None-Match`, 304), and blobs whose checksum
is known in advance (a v2 index given by its `.hash`, a v3 blob named by its checksum)
are not requested at all when a copy with that checksum is cached.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urljoin

import httpx

from cachegql.index import NotFoundError, ReadError, SourceLimits
from cachegql.server.bounded import (
    FLAGS,
    Progress,
    deadline_for,
    out_of_time,
    read_body,
    refused_redirect,
    short,
    time_left,
)
from cachegql.server.cache_files import read_cached, read_text, read_verified, write_atomically

__all__ = ["HttpReader"]

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})


class HttpReader:
    """Reads http(s) URLs; every failure is a ReadError naming the URL and the status.

    `on_redirect` is told of each redirect followed (`cachegql index --verbose`).
    """

    def __init__(
        self,
        cache: Path | None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        limits: SourceLimits | None = None,
        progress: Callable[[str], Progress] | None = None,
        on_redirect: Callable[[str], None] | None = None,
    ) -> None:
        self.cache = cache
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.limits = limits or SourceLimits()
        self.progress = progress
        self.on_redirect = on_redirect
        self._in_flight = threading.BoundedSemaphore(self.limits.max_fetches)
        self.client = httpx.Client(
            follow_redirects=False, headers={"user-agent": "cachegql", "accept-encoding": "gzip"}
        )
        self.downloaded = 0  # bytes received, for the summary and for tests

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> HttpReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def read(self, url: str, deadline: float | None = None) -> bytes:
        entry = self._entry(url)
        etag = read_text(entry.with_suffix(".etag")) if entry else None
        body = self._get(url, etag, deadline)
        if body is None and entry is not None:  # 304: the cached copy is current
            return read_cached(entry.with_suffix(".body"), url, self.limits)
        assert body is not None
        return body

    def read_verified(self, url: str, sha256: str, deadline: float | None = None) -> bytes:
        fetch = lambda: self.read(url, deadline)  # noqa: E731 (named for the line's length)
        return read_verified(self.cache, url, sha256, fetch, self.limits)

    def _get(self, url: str, etag: str | None, deadline: float | None) -> bytes | None:
        """The body at `url`, or None for a 304 to `etag`; retries transient failures.

        All of it is done by `deadline`: the source's, or the limit's from now.
        """
        deadline = deadline_for(deadline, self.limits)
        with self._in_flight:
            for attempt in range(self.retries + 1):
                last = attempt == self.retries
                try:
                    with self._follow(url, etag, deadline) as response:
                        if response.status_code == 304 and etag:
                            return None
                        if response.status_code == 404:
                            raise NotFoundError(f"{url}: HTTP 404 Not Found")
                        if response.status_code in RETRIED_STATUSES and not last:
                            self._pause(url, attempt, deadline)
                            continue
                        if response.status_code != 200:
                            raise ReadError(
                                f"{url}: HTTP {response.status_code} {response.reason_phrase}"
                                + (f" (after {attempt + 1} attempts)" if attempt else "")
                            )
                        body = self._body(url, response, deadline)
                except httpx.TimeoutException as exc:
                    self._over_time(url, deadline)
                    if last:
                        raise ReadError(
                            f"{url}: timed out ({type(exc).__name__}) after {attempt + 1} attempts"
                        ) from None
                    self._pause(url, attempt, deadline)
                    continue
                except httpx.RemoteProtocolError as exc:
                    if last:
                        raise ReadError(
                            f"{url}: the server broke off the answer ({exc}) "
                            f"after {attempt + 1} attempts"
                        ) from None
                    self._pause(url, attempt, deadline)
                    continue
                except httpx.TransportError as exc:
                    if last:
                        raise ReadError(f"{url}: cannot connect ({exc})") from None
                    self._pause(url, attempt, deadline)
                    continue
                self._remember(url, response.headers.get("etag"), body)
                return body
        raise ReadError(f"{url}: no answer")  # not reached: the last attempt returns or raises

    @contextmanager
    def _follow(self, url: str, etag: str | None, deadline: float) -> Iterator[httpx.Response]:
        """The answer to GET `url`, redirects followed within the limits and origin rules."""
        headers = {"if-none-match": etag} if etag else {}
        current = url
        for hop in range(self.limits.max_redirects + 1):
            timeout = self._timeout(url, deadline)
            with self.client.stream("GET", current, headers=headers, timeout=timeout) as response:
                if not response.has_redirect_location:
                    yield response
                    return
                target = urljoin(current, response.headers["location"])
                refused = refused_redirect(current, target)
                if refused is not None:
                    raise ReadError(f"{url}: redirected to {short(target)}: {refused}")
                if hop == self.limits.max_redirects:
                    raise ReadError(
                        f"{url}: more than {self.limits.max_redirects} redirects "
                        f"({FLAGS['max_redirects']}), the last to {short(target)}; "
                        "not followed"
                    )
                if self.on_redirect is not None:
                    self.on_redirect(f"{current} -> {target} ({response.status_code})")
                current = target

    def _timeout(self, url: str, deadline: float) -> httpx.Timeout:
        """This client's timeouts, cut to the time left of the read's whole budget."""
        left = self._over_time(url, deadline)
        return httpx.Timeout(min(self.timeout, left), connect=min(self.timeout, 10.0, left))

    def _over_time(self, url: str, deadline: float) -> float:
        return time_left(url, deadline, self.limits)

    def _body(self, url: str, response: httpx.Response, deadline: float) -> bytes:
        show = self.progress(url.rsplit("/", 1)[-1] or url) if self.progress else None
        body = read_body(url, response, self.limits, deadline, show)
        self.downloaded += response.num_bytes_downloaded
        return body

    def _pause(self, url: str, attempt: int, deadline: float) -> None:
        pause = self.backoff * (2**attempt)
        if time.monotonic() + pause >= deadline:  # no time left for another attempt
            raise out_of_time(url, self.limits)
        time.sleep(pause)

    def _entry(self, url: str) -> Path | None:
        if self.cache is None:
            return None
        entry = self.cache / "urls" / hashlib.sha256(url.encode()).hexdigest()
        return entry if entry.with_suffix(".body").is_file() else None

    def _remember(self, url: str, etag: str | None, body: bytes) -> None:
        if self.cache is None or not etag:
            return
        entry = self.cache / "urls" / hashlib.sha256(url.encode()).hexdigest()
        write_atomically(entry.with_suffix(".body"), body)
        write_atomically(entry.with_suffix(".etag"), etag.encode())
