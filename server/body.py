"""Bounds on what a request to /graphql may send: its body, in size and in time, and its
query string.

The body is read here, whole, before anything else sees it: at most `max_bytes` (a
`Content-Length` above it is refused before reading), within `timeout` seconds (a body
trickled slowly would otherwise hold a connection and its buffers for ever). Inner apps
(the response cache, the endpoint) then get it as one message. A refusal is a JSON
GraphQL error with a code: 413 for a body too large, 414 for a query string too long,
408 for a body too slow.

The time limit is kept by `deadlines` (one timer for all requests, met within an eighth of
the limit more), not a timer per request: anyio's cancel scope cost about 14 µs of CPU per
request, asyncio's `timeout` 6 µs (a quarter of a response cache hit).

No time limit is needed for a body already received whole: the protocol marks such a
request (`BODY_RECEIVED`, set by `protocol.GuardedHttpToolsProtocol`), and the one pass of
the usual POST (`fast_post.FastPost`, not this middleware) reads it without a deadline.
"""

from __future__ import annotations

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cachegql.server.deadlines import Deadlines

__all__ = ["BODY_RECEIVED", "DEFAULT_MAX_BYTES", "DEFAULT_TIMEOUT", "BodyLimit"]

DEFAULT_MAX_BYTES = 1024 * 1024
DEFAULT_TIMEOUT = 10.0
CODE = "BAD_USER_INPUT"
BODY_RECEIVED = "cachegql.body_received"
"""The scope key the protocol sets (True) once it has parsed the request's whole body: the
`receive` it hands the app then returns the rest of the body at once. A middleware that
reads the body before `FastPost`, or hands it another `receive`, must drop the key. (Not
the `receive` itself as the mark: the scope would hold it, it its cycle, and the cycle the
scope, a reference cycle per request left to the garbage collector: 3 µs a request.)"""


class _RefusedError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class BodyLimit:
    """ASGI middleware for one route: reads and bounds the body, then calls `app`."""

    def __init__(
        self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BYTES, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.deadlines = Deadlines(timeout)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            if len(scope["query_string"]) > self.max_bytes:
                raise _RefusedError(414, f"the query string is over {self.max_bytes:,} bytes")
            body = await self._read(scope, receive)
        except _RefusedError as refused:
            await _refuse(send, refused)
            return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: wait for the disconnect

        await self.app(scope, replay, send)

    async def _read(self, scope: Scope, receive: Receive) -> bytes:
        declared = _content_length(scope["headers"])
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise _RefusedError(413, self._too_large())
        try:
            return await self.deadlines.run(lambda: self._chunks(receive))
        except TimeoutError:
            raise _RefusedError(408, self._too_slow()) from None

    async def _chunks(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client left: the app will see it in time
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise _RefusedError(413, self._too_large())
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def refuse_too_slow(self, send: Send) -> None:
        """Answer 408 for a body that did not arrive in time (read by another pass)."""
        await _refuse(send, _RefusedError(408, self._too_slow()))

    def _too_slow(self) -> str:
        return f"the request body did not arrive within {self.timeout:g} s"

    def _too_large(self) -> str:
        return f"the request body is over {self.max_bytes:,} bytes, this server's limit"


def _content_length(headers: list[tuple[bytes, bytes]]) -> bytes:
    """The Content-Length header as sent (b"" if none): read from the raw headers, not
    through a `Headers` made for this one look."""
    for name, value in headers:
        if name == b"content-length":
            return value
    return b""


async def _refuse(send: Send, refused: _RefusedError) -> None:
    body = orjson.dumps({"errors": [{"message": refused.message, "extensions": {"code": CODE}}]})
    headers = [
        (b"content-type", b"application/json; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
