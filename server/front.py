"""The application's front door: GraphQL requests straight to their own stack.

Starlette sends every request through its error middleware, its exception middleware and
its router (a regular expression per route, scope copies) before the route's app: about
a tenth of the CPU of a cached answer. A GET or POST of /graphql, the requests that
matter, skips them here: it goes through the same middleware as any request (request id,
metrics, access record, CORS, gzip: the app's own list, built once more around the
GraphQL route), with the scope keys the router would have set; so do its other methods
but HEAD (a CORS preflight is answered by that middleware, any other method by the
endpoint: a 405 GraphQL error). Anything else (other paths, HEAD, the lifespan) goes to
starlette as before.

POSTs, the most usual of all, go on to `fast_post`, which answers the usual ones in one
flat pass and hands the rest to that same stack.

Nothing is lost by the skip: the GraphQL stack raises no HTTPException, and an exception
is answered 500 (with the request id) by the access record, as starlette would.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["GraphQLFirst", "front_door"]


class GraphQLFirst:
    """Pure ASGI: requests of `route`'s path to `graphql` (POST to `post` if given), but
    HEAD; the rest to `rest`."""

    def __init__(
        self,
        app: Starlette,
        rest: ASGIApp,
        graphql: ASGIApp,
        route: Route,
        post: ASGIApp | None = None,
    ) -> None:
        self.app = app
        self.rest = rest
        self.graphql = graphql
        self.post = graphql if post is None else post
        self.route = route
        self.path = route.path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.path and scope["method"] != "HEAD":
            scope["app"] = self.app
            scope["route"] = self.route
            scope["endpoint"] = self.route.endpoint
            scope["path_params"] = {}
            if scope["method"] == "POST":
                await self.post(scope, receive, send)
            else:
                await self.graphql(scope, receive, send)
            return
        await self.rest(scope, receive, send)


def front_door(
    app: Starlette,
    route: Route,
    middleware: list[Middleware],
    post: Callable[[ASGIApp], ASGIApp] | None = None,
) -> None:
    """Make `app` answer GET and POST of `route` through `middleware` around it alone;
    POST through `post(that stack)` if given (`fast_post`)."""
    graphql: ASGIApp = route.app
    for cls, args, kwargs in reversed(middleware):
        graphql = cls(graphql, *args, **kwargs)
    fast = None if post is None else post(graphql)
    app.middleware_stack = GraphQLFirst(app, app.build_middleware_stack(), graphql, route, fast)
