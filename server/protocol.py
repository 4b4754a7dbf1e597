"""uvicorn's httptools protocol with a bound on each request's head, in time and size.

uvicorn arms its keep-alive timer only once a response is sent: a connection that sends
nothing, or trickles its request line and headers a byte at a time, is kept open for
ever, and the headers it sends are kept whatever their size. Here each request's head
(request line and headers) must arrive within `head_timeout` seconds of the
connection or of the request's first byte, and be at most `max_head_bytes` long: else
the connection is closed (a 431 is sent first for a head too long). The body has its
own bound, read by the app (`graphql_http`). What the protocol itself refuses (a head
too long, a request httptools cannot parse) is answered as every error of the service
is: a JSON GraphQL error with a code; a head begun but not finished in time is a 408 (a
connection that sent nothing is closed without a word, as an idle one).

Refusals a client can read: a refusal is often sent while the client is still sending (a
body over the limit, announced by its Content-Length; a head too long; a body too
slow). Closing the socket then, with unread bytes in it, makes the kernel answer with a
reset, and the reset destroys the refusal before the client reads it ("connection reset
by peer" instead of the 413). So, as nginx's lingering close, a connection closed in the
middle of a request is only half-closed: the answer is sent, then the end of it (FIN),
and what the client still sends is read and thrown away until it closes its side, for
at most `LINGER_SECONDS` and `LINGER_BYTES`; only then is the socket closed.

A request whose body is wholly parsed (its end seen) says so in its scope
(`body.BODY_RECEIVED`): the app's `receive` then returns the rest of the body at once, and
a reader of the body needs no deadline (`fast_post.FastPost`). A small POST comes in one
read, and its end is parsed before the app's task first runs.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from cachegql.server.body import BODY_RECEIVED

__all__ = [
    "DEFAULT_HEAD_TIMEOUT",
    "LINGER_BYTES",
    "LINGER_SECONDS",
    "MAX_HEAD_BYTES",
    "GuardedHttpToolsProtocol",
    "protocol",
]

DEFAULT_HEAD_TIMEOUT = 10.0
MAX_HEAD_BYTES = 64 * 1024
LINGER_SECONDS = 10.0
LINGER_BYTES = 64 * 1024 * 1024
CODE = "BAD_USER_INPUT"


class _LingeringTransport:
    """The connection's transport as uvicorn sees it: `close` in the middle of a request
    becomes the protocol's lingering close. The calls of every request (`write`,
    `get_extra_info`) are the transport's own bound methods, not a forwarding wrapper."""

    def __init__(self, transport: asyncio.Transport, protocol: GuardedHttpToolsProtocol) -> None:
        self.transport = transport
        self.protocol = protocol
        self.write = transport.write
        self.writelines = transport.writelines
        self.get_extra_info = transport.get_extra_info
        self.pause_reading = transport.pause_reading
        self.resume_reading = transport.resume_reading
        self.get_write_buffer_size = transport.get_write_buffer_size
        self.set_write_buffer_limits = transport.set_write_buffer_limits
        self.abort = transport.abort

    def is_closing(self) -> bool:
        return self.protocol.lingering or self.transport.is_closing()

    def close(self) -> None:
        self.protocol.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(
        self,
        *args: Any,
        head_timeout: float = DEFAULT_HEAD_TIMEOUT,
        max_head_bytes: int = MAX_HEAD_BYTES,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.head_timeout = head_timeout
        self.max_head_bytes = max_head_bytes
        self.head_deadline: asyncio.TimerHandle | None = None
        self.head_bytes: int | None = 0  # None once the head is complete
        self.head_tail = b""  # the last bytes of the head read so far
        self.in_message = False  # a request begun and not yet wholly received
        self.lingering = False
        self.lingered = 0  # bytes read and thrown away while lingering
        self.raw: asyncio.Transport | None = None
        self.linger_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self.raw = transport
        super().connection_made(_LingeringTransport(transport, self))  # type: ignore[arg-type]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.linger_timer is not None:
            self.linger_timer.cancel()
            self.linger_timer = None
        super().connection_lost(exc)

    def close(self) -> None:
        """Close the connection: at once between requests, lingering in the middle of one
        (the client may still be sending it)."""
        raw = self.raw
        assert raw is not None
        if self.lingering or raw.is_closing():
            return
        if not (self.in_message or self.head_bytes):
            raw.close()
            return
        self.lingering = True
        self._disarm()
        if raw.can_write_eof():
            raw.write_eof()  # the end of the answer: the client reads it, then closes
        raw.resume_reading()
        self.linger_timer = self.loop.call_later(LINGER_SECONDS, raw.close)

    def shutdown(self) -> None:
        """The server is stopping: a lingering connection is closed now, not at its bound."""
        if self.lingering and self.raw is not None:
            self.raw.close()
            return
        super().shutdown()

    def eof_received(self) -> None:
        if self.lingering and self.raw is not None:
            self.raw.close()  # the client has read the answer and closed its side

    def data_received(self, data: bytes) -> None:
        if self.lingering:
            self.lingered += len(data)
            if self.lingered > LINGER_BYTES and self.raw is not None:
                self.raw.close()
            return
        if self.head_bytes is not None:
            # One read can hold the end of the head and the start of the body: only the
            # bytes up to the blank line (perhaps begun in the previous read) are head.
            seen = self.head_tail + data
            end = seen.find(b"\r\n\r\n")
            head = len(data) if end < 0 else end + 4 - len(self.head_tail)
            self.head_bytes += head
            self.head_tail = seen[-3:]
            if self.head_bytes > self.max_head_bytes:
                self._disarm()
                message = f"the request line and headers are over {self.max_head_bytes} bytes"
                self._refuse(b"431 Request Header Fields Too Large", message)
                return
        super().data_received(data)
        # A request begun in this read and not whole: its head's time starts now. Armed
        # here, not as it begins, so that a request read whole at once (the usual) costs
        # no timer set and cancelled.
        head_bytes = self.head_bytes  # None: the head is whole; 0: no request begun
        if (
            head_bytes is not None
            and self.head_deadline is None
            and not self.lingering
            and (head_bytes or self.in_message)
        ):
            self._arm()

    def send_400_response(self, msg: str) -> None:
        self._refuse(b"400 Bad Request", f"the request is not valid HTTP/1.1: {msg}")

    def _refuse(self, status: bytes, message: str) -> None:
        body = orjson.dumps({"errors": [{"message": message, "extensions": {"code": CODE}}]})
        self.transport.write(
            b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, len(body), body)
        )
        self.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.in_message = True

    def on_headers_complete(self) -> None:
        if self.head_deadline is not None:
            self._disarm()
        self.head_bytes = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self.in_message = False
        self.scope[BODY_RECEIVED] = True  # type: ignore[literal-required]
        super().on_message_complete()
        self.head_bytes, self.head_tail = 0, b""  # the next request's, on a kept-alive connection

    def _arm(self) -> None:
        self.head_deadline = self.loop.call_later(self.head_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self.head_deadline is not None:
            self.head_deadline.cancel()
            self.head_deadline = None

    def _too_slow(self) -> None:
        self.head_deadline = None
        if self.transport.is_closing():
            return
        if self.in_message or self.head_bytes:  # a head begun, not finished in time
            message = f"the request line and headers did not arrive within {self.head_timeout:g} s"
            self._refuse(b"408 Request Timeout", message)
        else:
            self.close()  # nothing sent: an idle connection


def protocol(head_timeout: float = DEFAULT_HEAD_TIMEOUT) -> Any:
    """The protocol class for `uvicorn.run(http=...)`, with this head timeout."""
    return partial(GuardedHttpToolsProtocol, head_timeout=head_timeout)
