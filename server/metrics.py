"""Prometheus metrics at /metrics.

TO BE REPLACED (issue 11): requests by operation and outcome, latency, error codes, response
cache hits and misses, the index build and its age, specs per tag, reloads; correct with
several worker processes.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from cachegql.server.holder import IndexHolder

__all__ = ["Metrics", "MetricsMiddleware"]


class Metrics:
    """The metrics of one worker process."""

    def __init__(self, holder: IndexHolder) -> None:
        self.holder = holder

    def reloaded(self, ok: bool) -> None:
        """An index reload succeeded (or failed)."""

    async def endpoint(self, request: Request) -> Response:
        return PlainTextResponse("")


class MetricsMiddleware:
    """Observes each request once its response is sent (see `request_info`)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
