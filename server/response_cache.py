"""A cache of whole GraphQL answers, keyed by the index build and what changes the answer.

The index being served never changes, and a new build has a new id: so the answer to
the same request (POST body, or GET query string) in the same negotiated media type is
the same until a rebuild, and most clients send the same few requests over and over.
Such repeats are answered from memory here, before GraphQL parses anything. Answers
with errors are not kept. A conditional GET whose ETag still holds is answered 304 here,
whether or not the answer is in memory (see `http_cache`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cachegql.server.compression import accepts_gzip, compressible, gzipped, whole
from cachegql.server.http_cache import cache_control, etag, matches, negotiate
from cachegql.server.request_info import RequestInfo, request_info

__all__ = ["MAX_BODY_BYTES", "Key", "ResponseCache", "replay"]

MAX_BODY_BYTES = 64 * 1024
MAX_ENTRY_SHARE = 0.05  # no single answer may take more than this share of the cache
Key = tuple[str, str, str, bytes]


@dataclass
class _Entry:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    operation: str | None
    gzipped: tuple[list[tuple[bytes, bytes]], bytes] | None = None
    """Headers and body gzipped, made on the first hit from a client that accepts gzip."""
    plain: list[tuple[bytes, bytes]] | None = None
    """The headers the compression middleware sends to a client that does not accept gzip
    (`whole`), made on the first such hit of the front door (`fast_post`)."""

    @property
    def size(self) -> int:
        return len(self.body) + (len(self.gzipped[1]) if self.gzipped else 0)


class ResponseCache:
    """ASGI middleware in front of /graphql: answers repeats from memory (LRU by size)."""

    def __init__(
        self,
        app: ASGIApp,
        build_id: Callable[[], str],
        max_bytes: int,
        max_age: int = 60,
        gzip_min_bytes: int = 0,
    ) -> None:
        self.app = app
        self.build_id = build_id
        self.max_bytes = max_bytes
        self.max_age = max_age
        self.gzip_min_bytes = gzip_min_bytes
        self.entries: OrderedDict[Key, _Entry] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def stats(self) -> dict[str, int]:
        return {
            "entries": len(self.entries),
            "bytes": self.bytes,
            "max_bytes": self.max_bytes,
            "hits": self.hits,
            "misses": self.misses,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A HEAD is a GET whose body uvicorn does not send: it may use a GET's answer.
        method = "GET" if scope.get("method") == "HEAD" else scope.get("method")
        if scope["type"] != "http" or method not in ("GET", "POST"):
            await self.app(scope, receive, send)
            return
        if method == "POST" and self.max_bytes <= 0:  # nothing to look up or keep
            await self.app(scope, receive, send)
            return
        if method == "GET" and not scope["query_string"]:  # the playground page
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        media = negotiate(headers.get("accept", ""))
        if media is None:
            await self.app(scope, receive, send)
            return
        build_id = self.build_id()
        if method == "GET":
            tag = etag(build_id, media, scope["query_string"])
            if matches(headers.get("if-none-match", ""), tag):
                await _not_modified(send, tag, self.max_age)
                return
            key: Key = (build_id, media, "GET", scope["query_string"])
            read: list[Message] = []
        else:
            read, body = await _read_body(receive)
            content_type = headers.get("content-type", "").split(";")[0].strip()
            if body is None or content_type != "application/json":
                await self.app(scope, replay(read, receive), send)
                return
            key = (build_id, media, "POST", body)
        if self.max_bytes <= 0:
            await self.app(scope, replay(read, receive), send)
            return
        info = request_info(scope)
        entry = self.hit(key, info)
        if entry is not None:
            if self.gzip_min_bytes > 0 and accepts_gzip(scope["headers"]):
                await self._send_gzipped(send, key, entry)
            else:
                await _send(send, entry.status, entry.headers, entry.body)
            return
        captured: list[Message] = []

        async def capture(message: Message) -> None:
            # Kept as sent from here: middleware outside (CORS) edits the headers it sees.
            if message["type"] == "http.response.start":
                captured.append({**message, "headers": list(message.get("headers", []))})
            else:
                captured.append(message)
            await send(message)

        await self.app(scope, replay(read, receive), capture)
        if not info.codes:
            self._keep(key, captured, info.operation)

    def hit(self, key: Key, info: RequestInfo) -> _Entry | None:
        """The entry of `key` if any (a hit), else None (a miss): counted, and noted in `info`."""
        entry = self.entries.get(key)
        if entry is None:
            self.misses += 1
            info.cache = "miss"
            return None
        self.hits += 1
        info.cache, info.operation = "hit", entry.operation
        self.entries.move_to_end(key)
        return entry

    def sent(
        self, entry: _Entry, minimum_size: int, accepted: bool
    ) -> tuple[list[tuple[bytes, bytes]], bytes]:
        """`entry` as the compression middleware (`minimum_size`) sends it to a client that
        does or does not accept gzip: its gzipped bytes and headers are made once."""
        if not compressible(entry.headers, minimum_size):
            return entry.headers, entry.body
        if accepted:
            if entry.gzipped is None:
                entry.gzipped = gzipped(entry.headers, entry.body)
                self.bytes += len(entry.gzipped[1])
                self._evict()
            return entry.gzipped
        if entry.plain is None:
            entry.plain = whole(entry.headers, entry.body, minimum_size, False)[0]
        return entry.plain, entry.body

    async def _send_gzipped(self, send: Send, key: Key, entry: _Entry) -> None:
        """The entry compressed (once; the compression middleware passes it through)."""
        headers, body = self.sent(entry, self.gzip_min_bytes, True)
        await _send(send, entry.status, headers, body)

    def _keep(self, key: Key, messages: list[Message], operation: str | None) -> None:
        start = next((m for m in messages if m["type"] == "http.response.start"), None)
        if start is None:
            return
        chunks = [m.get("body", b"") for m in messages if m["type"] == "http.response.body"]
        self.keep(key, start["status"], list(start.get("headers", [])), b"".join(chunks), operation)

    def keep(
        self,
        key: Key,
        status: int,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        operation: str | None,
    ) -> None:
        """Keep an answer without errors to the request of `key` (if a 200, and not too big)."""
        if status != 200 or len(body) > self.max_bytes * MAX_ENTRY_SHARE:
            return
        entry = _Entry(status, headers, body, operation)
        self.entries[key] = entry
        self.bytes += entry.size + len(key[3])
        self._evict()

    def _evict(self) -> None:
        while self.bytes > self.max_bytes and self.entries:
            old_key, old = self.entries.popitem(last=False)
            self.bytes -= old.size + len(old_key[3])


async def _read_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The messages read, and the whole body if it was small enough to read at once."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        size += len(message.get("body", b""))
        if size > MAX_BODY_BYTES:
            return messages, None
        if not message.get("more_body", False):
            return messages, b"".join(m.get("body", b"") for m in messages)


def replay(messages: list[Message], receive: Receive) -> Receive:
    """A receive that first gives back what was already read, then reads on."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


async def _send(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    # A copy each time, so that what middleware outside adds is not kept for the next.
    await send({"type": "http.response.start", "status": status, "headers": list(headers)})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _not_modified(send: Send, tag: str, max_age: int) -> None:
    headers = [(b"etag", tag.encode()), (b"cache-control", cache_control(max_age).encode())]
    await send({"type": "http.response.start", "status": 304, "headers": headers})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
