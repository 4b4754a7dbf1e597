"""A cache of whole GraphQL responses, keyed by the index build and the request.

The index being served never changes, and a new build has a new id: so the answer to
the same POST body (query, variables, operation) is the same until a rebuild, and most
clients send the same few requests over and over. Such repeats are answered from
memory here, before GraphQL parses anything. Responses with errors are not kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CACHEABLE_ACCEPT = {b"", b"*/*", b"application/json", b"application/graphql-response+json"}
MAX_BODY_BYTES = 64 * 1024
MAX_ENTRY_SHARE = 0.05  # no single answer may take more than this share of the cache


@dataclass
class _Entry:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


class ResponseCache:
    """ASGI middleware caching successful POST /graphql JSON responses, LRU by size."""

    def __init__(self, app: ASGIApp, build_id: Callable[[], str], max_bytes: int) -> None:
        self.app = app
        self.build_id = build_id
        self.max_bytes = max_bytes
        self.entries: OrderedDict[tuple[str, bytes, bytes], _Entry] = OrderedDict()
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
        accept = self._cacheable_accept(scope)
        if accept is None:
            await self.app(scope, receive, send)
            return
        read, body = await _read_body(receive)
        if body is None:  # too large, or not a plain body: pass it on untouched
            await self.app(scope, _replay(read, receive), send)
            return
        key = (self.build_id(), accept, body)
        entry = self.entries.get(key)
        if entry is not None:
            self.hits += 1
            self.entries.move_to_end(key)
            await _send(send, entry)
            return
        self.misses += 1
        captured: list[Message] = []

        async def capture(message: Message) -> None:
            captured.append(message)
            await send(message)

        await self.app(scope, _replay(read, receive), capture)
        self._keep(key, captured)

    def _cacheable_accept(self, scope: Scope) -> bytes | None:
        """The request's Accept header when its answer may be cached, else None."""
        if self.max_bytes <= 0 or scope["type"] != "http" or scope["method"] != "POST":
            return None
        headers = dict(scope["headers"])
        content_type = headers.get(b"content-type", b"").split(b";")[0].strip()
        accept: bytes = headers.get(b"accept", b"")
        if content_type != b"application/json" or accept not in CACHEABLE_ACCEPT:
            return None
        return accept

    def _keep(self, key: tuple[str, bytes, bytes], messages: list[Message]) -> None:
        start = next((m for m in messages if m["type"] == "http.response.start"), None)
        if start is None or start["status"] != 200:
            return
        chunks = [m.get("body", b"") for m in messages if m["type"] == "http.response.body"]
        body = b"".join(chunks)
        if b'"errors"' in body or len(body) > self.max_bytes * MAX_ENTRY_SHARE:
            return
        entry = _Entry(start["status"], list(start.get("headers", [])), body)
        self.entries[key] = entry
        self.bytes += len(body) + len(key[2])
        while self.bytes > self.max_bytes and self.entries:
            old_key, old = self.entries.popitem(last=False)
            self.bytes -= len(old.body) + len(old_key[2])


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


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A receive that first gives back what was already read, then reads on."""
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


async def _send(send: Send, entry: _Entry) -> None:
    await send({"type": "http.response.start", "status": entry.status, "headers": entry.headers})
    await send({"type": "http.response.body", "body": entry.body, "more_body": False})
