"""A cap on the GraphQL requests one worker has in progress.

Each request in progress holds its body and its answer in memory, and waits for the
worker threads (`offload`): past a few dozen, more only queue, and a flood of them would
hold memory without bound. Beyond `max_requests`, a request is answered at once with 503,
`Retry-After`, and a JSON GraphQL error with a code; health, readiness and metrics are not
counted, so an overloaded worker still says so.
"""

from __future__ import annotations

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["DEFAULT_MAX_REQUESTS", "OVERLOADED", "Admission"]

DEFAULT_MAX_REQUESTS = 64
OVERLOADED = "SERVICE_OVERLOADED"
RETRY_AFTER_SECONDS = 1


class Admission:
    """ASGI middleware for one route: admits at most `max_requests` at a time."""

    def __init__(self, app: ASGIApp, max_requests: int = DEFAULT_MAX_REQUESTS) -> None:
        self.app = app
        self.max_requests = max_requests
        self.in_progress = 0
        """Requests in progress, counted with or without a bound."""
        self.arrived = 0
        """Requests that reached the door, admitted or not (`idle_memory` tells an idle
        worker by it)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.arrived += 1
        if 0 < self.max_requests <= self.in_progress:
            await _overloaded(send, self.max_requests)
            return
        self.in_progress += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_progress -= 1


async def _overloaded(send: Send, limit: int) -> None:
    message = (
        f"this worker has {limit} requests in progress, its limit: retry in {RETRY_AFTER_SECONDS} s"
    )
    body = orjson.dumps({"errors": [{"message": message, "extensions": {"code": OVERLOADED}}]})
    headers = [
        (b"content-type", b"application/json; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_SECONDS).encode()),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
