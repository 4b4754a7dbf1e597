"""The ASGI application: GraphQL at /graphql, the playground, the web front end at /, health,
readiness, metrics.

From the outside in (`front`: GraphQL requests skip starlette's own layers and router,
not this middleware): each request gets an id, and once answered is measured (`metrics`)
and logged (`access_log`); it passes CORS and gzip (`compression`), then reaches its
route. /graphql admits a bounded number of requests at a time (`admission`), reads each
body within bounds of size and time (`body`), answers repeated requests from the
response cache, and only then runs the GraphQL layer (`graphql_http`). The usual POST
takes the same steps in one flat pass (`fast_post`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp
from uvicorn.config import STARTUP_FAILURE

from cachegql.index import IndexLoadError, IndexStore, releases_freed
from cachegql.schema import export_sdl
from cachegql.server import playground
from cachegql.server.access_log import LOG_FORMAT, AccessLog, configure_logger
from cachegql.server.admission import Admission
from cachegql.server.body import BodyLimit
from cachegql.server.compression import Compression
from cachegql.server.fast_post import FastPost
from cachegql.server.front import front_door
from cachegql.server.frontend import Frontend
from cachegql.server.graphql_http import GraphQLEndpoint
from cachegql.server.holder import IndexHolder
from cachegql.server.idle_memory import release_when_idle
from cachegql.server.metrics import Metrics
from cachegql.server.response_cache import ResponseCache
from cachegql.server.settings import Settings
from cachegql.server.version import installed_version

__all__ = ["Settings", "app_from_env", "create_app"]

logger = logging.getLogger("cachegql.server")


def create_app(settings: Settings, store: IndexStore | None = None) -> Starlette:
    """The application for `settings`; the index is opened here, before the first request,
    unless `store` is that index opened already."""
    holder = IndexHolder(settings.index, settings.default_tag, store)
    metrics = Metrics(holder)
    holder.on_reload = metrics.reloaded
    endpoint = GraphQLEndpoint(holder, settings)
    graphql = ResponseCache(
        endpoint,
        build_id=lambda: holder.store.build_id,
        max_bytes=int(settings.response_cache_mb * 1024 * 1024),
        max_age=settings.cache_max_age,
        gzip_min_bytes=settings.gzip_min_bytes,
    )
    limit = BodyLimit(graphql, settings.max_body_bytes, settings.read_timeout)
    bounded = Admission(limit, settings.max_requests)
    ready = {"serving": False}

    def arrived() -> int:
        return bounded.arrived

    def busy() -> bool:  # a request in progress, or a query still running (abandoned)
        return bounded.in_progress > 0 or endpoint.offloader.limiter.borrowed_tokens > 0

    sdl = export_sdl()

    async def health(request: Request) -> Response:
        store = holder.store
        return JSONResponse(
            {
                "status": "ok",
                "version": installed_version(),
                "build": store.build_id,
                "default_tag": store.default_tag,
                "tags": {t: store.snapshots[t].num_specs for t in store.tags},
                "response_cache": graphql.stats(),
            }
        )

    async def readiness(request: Request) -> Response:
        if ready["serving"]:
            return JSONResponse({"status": "ready", "build": holder.store.build_id})
        return JSONResponse({"status": "not ready"}, status_code=503)

    async def schema(request: Request) -> Response:
        return PlainTextResponse(sdl, media_type="application/graphql")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            if settings.reload_interval > 0:
                tasks.start_soon(_watch, holder, settings.reload_interval)
            if releases_freed():
                tasks.start_soon(release_when_idle, arrived, busy)
            ready["serving"] = True
            try:
                yield
            finally:
                ready["serving"] = False  # shutting down: no new traffic, please
                tasks.cancel_scope.cancel()
                metrics.tally.flush()

    middleware = [
        Middleware(
            AccessLog,
            log_format=settings.log_format,
            enabled=settings.access_log,
            observe=metrics.observe,
        ),
    ]
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["*"],
                expose_headers=["ETag", "X-Request-ID"],
                max_age=600,
            )
        )
    if settings.gzip_min_bytes > 0:
        middleware.append(Middleware(Compression, minimum_size=settings.gzip_min_bytes))
    graphql_route = Route("/graphql", bounded, methods=["GET", "POST"])
    app = Starlette(
        routes=[
            graphql_route,  # first: the most asked
            Route("/healthz", health),
            Route("/readyz", readiness),
            Route("/metrics", metrics.endpoint),
            Route("/graphql/schema.graphql", schema),
            *playground.routes(),
            *Frontend().routes(),
        ],
        middleware=middleware,
        lifespan=lifespan,
    )

    def fast(stack: ASGIApp) -> ASGIApp:
        assert isinstance(stack, AccessLog)  # the outermost of `middleware`
        return FastPost(
            stack,
            log=stack,
            admission=bounded,
            limit=limit,
            cache=graphql,
            endpoint=endpoint,
            gzip_min_bytes=settings.gzip_min_bytes,
        )

    # /graphql without starlette's own layers; without CORS (which edits every answer's
    # headers), a usual POST in one pass
    front_door(app, graphql_route, middleware, None if settings.cors_origins else fast)
    app.state.holder = holder
    app.state.offloader = endpoint.offloader
    app.state.endpoint = endpoint
    app.state.admission = bounded
    app.state.metrics = metrics
    app.state.response_cache = graphql
    return app


async def _watch(holder: IndexHolder, interval: float) -> None:
    while True:
        await anyio.sleep(interval)
        await anyio.to_thread.run_sync(holder.reload_if_changed)


def app_from_env() -> Starlette:
    """Factory for uvicorn workers: settings come from CACHEGQL_* variables.

    A worker whose index cannot be loaded (removed or damaged since the server checked
    it) says why and exits with uvicorn's `STARTUP_FAILURE`: its supervisor then stops the
    server (`listen.run`) instead of starting it again, and again, with a traceback each."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    settings = Settings.from_env()
    configure_logger(settings.log_format)
    try:
        return create_app(settings)
    except IndexLoadError as exc:
        logger.error("worker %d cannot load its index: %s", os.getpid(), exc)
        sys.exit(STARTUP_FAILURE)
