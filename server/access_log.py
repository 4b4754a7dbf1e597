"""Request ids and one log line per request (text or JSON).

TO BE REPLACED (issue 11): `X-Request-ID` honoured or generated and echoed; with
`--log-format json`, one object per request (time, status, duration, operation, error
codes, request id).
"""

from __future__ import annotations

from typing import Literal

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["AccessLog"]


class AccessLog:
    """Gives each request an id and, if `enabled`, logs a line once it is answered."""

    def __init__(
        self, app: ASGIApp, *, log_format: Literal["text", "json"] = "text", enabled: bool = True
    ) -> None:
        self.app = app
        self.log_format = log_format
        self.enabled = enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
