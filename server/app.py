"""The ASGI application: strawberry's GraphQL app at /graphql, plus health and reload."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL

from cachegql.schema import DEFAULT_MAX_FIRST, Context, build_schema
from cachegql.server.holder import IndexHolder
from cachegql.server.offload import Offloader
from cachegql.server.response_cache import ResponseCache
from cachegql.server.version import VERSION

__all__ = ["GraphQLApp", "Settings", "app_from_env", "create_app"]

logger = logging.getLogger("cachegql.server")
ENV_PREFIX = "CACHEGQL_"


@dataclass(frozen=True)
class Settings:
    """How to serve: the index, its default tag, the page cap, how often to look for rebuilds."""

    index: Path
    default_tag: str | None = None
    max_first: int = DEFAULT_MAX_FIRST
    reload_interval: float = 2.0
    response_cache_mb: float = 64.0

    def to_env(self) -> dict[str, str]:
        env = {
            "INDEX": str(self.index),
            "MAX_FIRST": str(self.max_first),
            "RELOAD_INTERVAL": str(self.reload_interval),
            "RESPONSE_CACHE_MB": str(self.response_cache_mb),
        }
        if self.default_tag:
            env["DEFAULT_TAG"] = self.default_tag
        return {ENV_PREFIX + k: v for k, v in env.items()}

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        return cls(
            index=Path(env[ENV_PREFIX + "INDEX"]),
            default_tag=env.get(ENV_PREFIX + "DEFAULT_TAG") or None,
            max_first=int(env.get(ENV_PREFIX + "MAX_FIRST", DEFAULT_MAX_FIRST)),
            reload_interval=float(env.get(ENV_PREFIX + "RELOAD_INTERVAL", 2.0)),
            response_cache_mb=float(env.get(ENV_PREFIX + "RESPONSE_CACHE_MB", 64.0)),
        )


class GraphQLApp(GraphQL[Context, None]):
    """Each request is answered from the index current when it arrived."""

    def __init__(self, holder: IndexHolder, settings: Settings) -> None:
        self.offloader = Offloader()
        super().__init__(build_schema(settings.max_first, runner=self.offloader))
        self.holder = holder
        self.settings = settings

    async def get_context(self, request: Request | WebSocket, response: Any) -> Context:
        return Context(store=self.holder.store, max_first=self.settings.max_first)


def create_app(settings: Settings) -> Starlette:
    """The application for `settings`; the index is opened here, before the first request."""
    holder = IndexHolder(settings.index, settings.default_tag)
    graphql_app = GraphQLApp(holder, settings)
    graphql = ResponseCache(
        graphql_app,
        build_id=lambda: holder.store.build_id,
        max_bytes=int(settings.response_cache_mb * 1024 * 1024),
    )

    async def health(request: Request) -> Response:
        store = holder.store
        return JSONResponse(
            {
                "status": "ok",
                "version": VERSION,
                "build": store.build_id,
                "default_tag": store.default_tag,
                "tags": {t: store.snapshots[t].num_specs for t in store.tags},
                "response_cache": graphql.stats(),
            }
        )

    async def home(request: Request) -> Response:
        return RedirectResponse("/graphql")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            if settings.reload_interval > 0:
                tasks.start_soon(_watch, holder, settings.reload_interval)
            yield
            tasks.cancel_scope.cancel()

    app = Starlette(
        routes=[
            Route("/", home),
            Route("/healthz", health),
            Route("/graphql", graphql, methods=["GET", "POST"]),
        ],
        lifespan=lifespan,
    )
    app.state.holder = holder
    app.state.offloader = graphql_app.offloader
    return app


async def _watch(holder: IndexHolder, interval: float) -> None:
    while True:
        await anyio.sleep(interval)
        await anyio.to_thread.run_sync(holder.reload_if_changed)


def app_from_env() -> Starlette:
    """Factory for uvicorn workers: settings come from CACHEGQL_* variables."""
    logging.basicConfig(level=logging.INFO)
    return create_app(Settings.from_env())
