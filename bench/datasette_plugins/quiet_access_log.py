"""Datasette plugin (loaded with --plugins-dir): no per-request access log lines.

`datasette serve` runs uvicorn with its access log on and offers no switch for it; cachegql is
benchmarked with `--no-access-log`, so the peer gets the same. uvicorn decides per connection
whether to log (`logging.getLogger("uvicorn.access").hasHandlers()`) and installs its handlers
after datasette's startup hooks have run, so the handlers are removed when uvicorn sends the ASGI
lifespan event, which comes after its logging setup and before the first connection.
"""

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from datasette import hookimpl

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


def silence_access_log() -> None:
    """Detach uvicorn's access logger from every handler."""
    access = logging.getLogger("uvicorn.access")
    access.handlers.clear()
    access.propagate = False


@hookimpl
def asgi_wrapper() -> Callable[[ASGIApp], ASGIApp]:
    """Wrap datasette's ASGI app: silence the access log on the lifespan event."""

    def wrap(app: ASGIApp) -> ASGIApp:
        async def quiet(scope: Scope, receive: Any, send: Any) -> None:
            if scope["type"] == "lifespan":
                silence_access_log()
            await app(scope, receive, send)

        return quiet

    return wrap
