"""What one HTTP request did, filled in as it is answered and read when it is logged.

The GraphQL layer knows the operation and the error codes, the response cache whether it
answered; the access log and the metrics, which wrap everything, read this record once
the response has been sent. It lives in the ASGI scope's `state`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.types import Scope

__all__ = ["RequestInfo", "request_info"]

_KEY = "cachegql"


@dataclass
class RequestInfo:
    request_id: str = ""
    operation: str | None = None
    """The GraphQL operation's name (`operationName`, else the document's), if it has one."""
    codes: list[str] = field(default_factory=list)
    """`extensions.code` of each error of the answer."""
    cache: str | None = None
    """"hit" or "miss" when the response cache was asked; None when it was not."""
    persisted: str | None = None
    """"hit", "miss" or "registered" for an automatic persisted query."""
    execution: str | None = None
    """How the GraphQL operation was executed (`cachegql.schema.EXECUTIONS`), if it was."""


def request_info(scope: Scope) -> RequestInfo:
    """The record of the request of `scope`, made on first use."""
    state = scope.setdefault("state", {})
    info = state.get(_KEY)
    if not isinstance(info, RequestInfo):
        info = state[_KEY] = RequestInfo()
    return info
