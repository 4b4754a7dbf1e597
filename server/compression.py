"""Gzip for answers of at least `minimum_size` bytes, to clients that accept it.

Starlette's GZipMiddleware wraps every response in a responder that inspects it, whether
or not the client accepts gzip: a few microseconds on each request, the cost of a cached
answer. This one wraps only what it may compress, and passes through what is already
encoded, so that the response cache can keep an answer's gzipped bytes and send them
again without compressing them again (`gzipped`).
"""

from __future__ import annotations

import gzip
import zlib

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Compression", "accepts_gzip", "compressible", "gzipped", "whole"]

COMPRESS_LEVEL = 6
_TEXTUAL = (b"application/json", b"application/graphql", b"application/javascript", b"text/")
VARY = (b"vary", b"Accept-Encoding")


def accepts_gzip(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a request's `Accept-Encoding` names gzip (with a q above 0)."""
    for name, value in headers:
        if name == b"accept-encoding":
            for item in value.lower().split(b","):
                coding, _, parameters = item.partition(b";")
                refused = parameters.replace(b" ", b"") in (b"q=0", b"q=0.0", b"q=0.00")
                if coding.strip() in (b"gzip", b"*") and not refused:
                    return True
    return False


def compressible(headers: list[tuple[bytes, bytes]], minimum_size: int) -> bool:
    """Whether a response with these headers is worth gzipping: textual, not yet encoded,
    and not known to be shorter than `minimum_size`."""
    textual = False
    for name, value in headers:
        if name == b"content-encoding":
            return False
        if name == b"content-type":
            textual = value.startswith(_TEXTUAL) or b"+json" in value.split(b";")[0]
        elif name == b"content-length" and int(value) < minimum_size:
            return False
    return textual


def gzipped(
    headers: list[tuple[bytes, bytes]], body: bytes
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """A whole response, gzipped: its new headers and body."""
    data = gzip.compress(body, COMPRESS_LEVEL, mtime=0)
    kept = [(n, v) for n, v in headers if n not in (b"content-length", b"vary")]
    encoded = [(b"content-encoding", b"gzip"), (b"content-length", str(len(data)).encode())]
    return [*kept, *encoded, VARY], data


def whole(
    headers: list[tuple[bytes, bytes]], body: bytes, minimum_size: int, accepted: bool
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """What `Compression` sends of an answer sent whole (one body message): gzipped if
    `accepted` and worth it, marked `Vary: Accept-Encoding` if it could have been."""
    if not compressible(headers, minimum_size):
        return headers, body
    if not accepted or len(body) < minimum_size:
        return [*headers, VARY], body
    return gzipped(headers, body)


class Compression:
    """ASGI middleware: gzip what is compressible (see `compressible`) when accepted, and
    mark it `Vary: Accept-Encoding` when not."""

    def __init__(self, app: ASGIApp, minimum_size: int) -> None:
        self.app = app
        self.minimum_size = minimum_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if accepts_gzip(scope["headers"]):
            await _Gzip(send, self.minimum_size).run(self.app, scope, receive)
            return
        minimum_size = self.minimum_size

        async def send_with_vary(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                if compressible(headers, minimum_size):
                    message["headers"] = [*headers, VARY]
            await send(message)

        await self.app(scope, receive, send_with_vary)


class _Gzip:
    """One response to a client that accepts gzip."""

    def __init__(self, send: Send, minimum_size: int) -> None:
        self.send = send
        self.minimum_size = minimum_size
        self.start: Message | None = None
        self.stream: zlib._Compress | None = None

    async def run(self, app: ASGIApp, scope: Scope, receive: Receive) -> None:
        await app(scope, receive, self.receive_message)

    async def receive_message(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if compressible(message.get("headers", []), self.minimum_size):
                self.start = message  # held until the body shows how to send it
                return
        elif kind == "http.response.body" and self.start is not None:
            await self._body(self.start, message)
            return
        await self.send(message)

    async def _body(self, start: Message, message: Message) -> None:
        body, more = message.get("body", b""), message.get("more_body", False)
        headers = start.get("headers", [])
        if self.stream is None and not more:  # the whole answer at once
            self.start = None
            headers, body = whole(headers, body, self.minimum_size, True)
            await self.send({**start, "headers": headers})
            await self.send({"type": "http.response.body", "body": body})
            return
        if self.stream is None:  # a stream: compressed as it comes
            self.stream = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, 31)
            kept = [(n, v) for n, v in headers if n not in (b"content-length", b"vary")]
            await self.send({**start, "headers": [*kept, (b"content-encoding", b"gzip"), VARY]})
        data = self.stream.compress(body)
        if not more:
            data += self.stream.flush()
            self.start = None
        await self.send({"type": "http.response.body", "body": data, "more_body": more})
