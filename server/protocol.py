"""uvicorn's httptools protocol with a bound on each request's head, in time and size.

uvicorn arms its keep-alive timer only once a response is sent: a connection that sends
nothing, or trickles its request line and headers a byte at a time, is kept open for
ever, and the headers it sends are kept whatever their size. Here each request's head
(request line and headers) must arrive within `head_timeout` seconds of the
connection or of the request's first byte, and be at most `max_head_bytes` long: else
the connection is closed (a 431 is sent first for a head too long). The body has its
own bound, read by the app (`graphql_http`). What the protocol itself refuses (a head
too long, a request httptools cannot parse) is answered as every error of the service
is: a JSON GraphQL error with a code.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["DEFAULT_HEAD_TIMEOUT", "MAX_HEAD_BYTES", "GuardedHttpToolsProtocol", "protocol"]

DEFAULT_HEAD_TIMEOUT = 10.0
MAX_HEAD_BYTES = 64 * 1024
CODE = "BAD_USER_INPUT"


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

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
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

    def send_400_response(self, msg: str) -> None:
        self._refuse(b"400 Bad Request", f"the request is not valid HTTP/1.1: {msg}")

    def _refuse(self, status: bytes, message: str) -> None:
        body = orjson.dumps({"errors": [{"message": message, "extensions": {"code": CODE}}]})
        self.transport.write(
            b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, len(body), body)
        )
        self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.head_deadline is None:
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        self.head_bytes = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
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
        if not self.transport.is_closing():
            self.transport.close()


def protocol(head_timeout: float = DEFAULT_HEAD_TIMEOUT) -> Any:
    """The protocol class for `uvicorn.run(http=...)`, with this head timeout."""
    return partial(GuardedHttpToolsProtocol, head_timeout=head_timeout)
