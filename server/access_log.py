"""Request ids and one log line per request (text or JSON).

Each HTTP request gets an id: the client's `X-Request-ID` when it is 1 to 128 visible
ASCII characters (no spaces or control characters), else a new one (32 hex digits). It is
stored in `request_info(scope).request_id` before anything else runs and echoed as the
`X-Request-ID` response header (also on a 500 answering an exception).

Once a request is answered (the last byte of a streamed answer sent, or the app failed),
the logger `cachegql.access` gets one INFO line: with `log_format="json"` a JSON object
with `time` (arrival, ISO 8601 UTC), `request_id`, `method`, `path` (as sent, without the
query string), `status`, `duration_ms`, `bytes` (of the body sent), `operation`, `codes`,
`cache`, `persisted` and `client` (`host:port`); with `"text"` the same in a short line:

    127.0.0.1:52144 "POST /graphql" 200 1.4ms 120B op=Spec errors=BAD_USER_INPUT cache=miss id=9f...

`configure_logger` sends the lines to stderr by themselves (a JSON line is only JSON).
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any, Literal, TextIO

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cachegql.server.request_info import RequestInfo, request_info

__all__ = [
    "HEADER",
    "LOG_FORMAT",
    "AccessLog",
    "Observer",
    "configure_logger",
    "internal_error",
]

LOG_FORMAT = "%(levelname)s: %(message)s"
"""The server's log lines (access lines in text, and the rest), as uvicorn writes its own."""

logger = logging.getLogger("cachegql.access")

HEADER = b"x-request-id"
MAX_ID_LENGTH = 128
_VALID_ID = re.compile(rb"[\x21-\x7e]{1,%d}" % MAX_ID_LENGTH)
_BARE = re.compile(r"[^\s\"=]+")
_INTERNAL_ERROR = b"Internal Server Error"
_ID_PREFIX = os.urandom(10).hex()
_ids = itertools.count(1)
Observer = Callable[[Scope, RequestInfo, int, float], None]
"""Called with each request's scope, record, status and seconds, once it is answered."""


class AccessLog:
    """Gives each request an id and, once it is answered, hands it to `observe` (the
    metrics) and, if `enabled`, logs a line: one wrapper per request for both."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        log_format: Literal["text", "json"] = "text",
        enabled: bool = True,
        observe: Observer | None = None,
    ) -> None:
        self.app = app
        self.log_format = log_format
        self.enabled = enabled
        self.observe = observe
        self._line = _json_line if log_format == "json" else _text_line

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        info, header = self.begin(scope)
        status = 0
        sent = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status, sent
            kind = message["type"]
            if kind == "http.response.start":
                status = message["status"]
                # A new message and list: the app may keep its own (the response cache does).
                message = {**message, "headers": [*message.get("headers", ()), header]}
            elif kind == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        logging_on = self.logging_on()
        arrived = time.time() if logging_on else 0.0
        start = time.perf_counter()
        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            if not status:  # answer 500 here, so that it carries the request id
                await internal_error(send_with_id)
            raise
        finally:
            self.end(scope, info, status, time.perf_counter() - start, sent, arrived, logging_on)

    def begin(self, scope: Scope) -> tuple[RequestInfo, tuple[bytes, bytes]]:
        """The request's record, with its id, and the `X-Request-ID` header to answer with."""
        request_id = _request_id(scope["headers"])
        info = request_info(scope)
        info.request_id = request_id
        return info, (HEADER, request_id.encode("ascii"))

    def logging_on(self) -> bool:
        """Whether a line is to be logged (read once per request, before it runs)."""
        return self.enabled and logger.isEnabledFor(logging.INFO)

    def end(
        self,
        scope: Scope,
        info: RequestInfo,
        status: int,
        elapsed: float,
        sent: int,
        arrived: float,
        logging_on: bool,
    ) -> None:
        """A request answered with `status` (0: none sent, the app failed: counted 500)."""
        if self.observe is not None:
            self.observe(scope, info, status or 500, elapsed)
        if logging_on:
            line = self._line(scope, info, status or 500, elapsed, sent, arrived)
            # logger.info without its look for the caller's frame, a third of its cost.
            logger.handle(logger.makeRecord(logger.name, logging.INFO, __file__, 0, line, (), None))


def configure_logger(log_format: Literal["text", "json"], stream: TextIO | None = None) -> None:
    """Access lines to `stream` (stderr) by themselves, not also through the root logger.

    To be called once per worker process before serving; calling it again replaces the
    handler it installed.
    """
    for old in [h for h in logger.handlers if getattr(h, "_cachegql_access", False)]:
        logger.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(logging.Formatter("%(message)s" if log_format == "json" else LOG_FORMAT))
    handler._cachegql_access = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def _request_id(headers: list[tuple[bytes, bytes]]) -> str:
    """The client's id if it sent a reasonable one, else a new one: unique across
    processes and restarts (a random prefix per process), cheap (a counter)."""
    for name, value in headers:
        if name == HEADER:
            if _VALID_ID.fullmatch(value):
                return value.decode("ascii")
            break
    return f"{_ID_PREFIX}{next(_ids):012x}"


async def internal_error(send: Send) -> None:
    """The 500 answering an app's exception before its answer began."""
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"%d" % len(_INTERNAL_ERROR)),
    ]
    await send({"type": "http.response.start", "status": 500, "headers": headers})
    await send({"type": "http.response.body", "body": _INTERNAL_ERROR})


def _path(scope: Scope) -> str:
    """The path as the client sent it (percent-encoded, so one token), without the query."""
    raw = scope.get("raw_path")
    if not raw:
        return str(scope["path"])
    text: str = raw.decode("ascii", "backslashreplace")
    return text.partition("?")[0]


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "-"


@functools.lru_cache(maxsize=4)
def _second(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def _iso(t: float) -> str:
    """`t` in ISO 8601, UTC, to the millisecond."""
    seconds = int(t)
    return f"{_second(seconds)}.{int((t - seconds) * 1000):03d}Z"


def _json_line(
    scope: Scope, info: RequestInfo, status: int, elapsed: float, sent: int, arrived: float
) -> str:
    record: dict[str, Any] = {
        "time": _iso(arrived),
        "request_id": info.request_id,
        "method": scope["method"],
        "path": _path(scope),
        "status": status,
        "duration_ms": round(elapsed * 1000, 3),
        "bytes": sent,
        "operation": info.operation,
        "codes": info.codes,
        "cache": info.cache,
        "persisted": info.persisted,
        "client": _client(scope),
    }
    return orjson.dumps(record).decode()


def _text_line(
    scope: Scope, info: RequestInfo, status: int, elapsed: float, sent: int, arrived: float
) -> str:
    parts = [
        f'{_client(scope)} "{scope["method"]} {_path(scope)}" {status} {elapsed * 1000:.1f}ms '
        f"{sent}B"
    ]
    if info.operation:
        parts.append(f"op={_token(info.operation)}")
    if info.codes:
        parts.append(f"errors={_token(','.join(info.codes))}")
    if info.cache:
        parts.append(f"cache={_token(info.cache)}")
    if info.persisted:
        parts.append(f"persisted={_token(info.persisted)}")
    parts.append(f"id={info.request_id}")
    return " ".join(parts)


def _token(text: str) -> str:
    """`text` as one token of a text line: as is, or JSON-quoted if it has spaces or quotes."""
    return text if _BARE.fullmatch(text) else orjson.dumps(text).decode()
