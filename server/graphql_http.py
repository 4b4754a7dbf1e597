"""GraphQL over HTTP at /graphql: strawberry's view, answering from the current index."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL

from cachegql.schema import Context, build_schema
from cachegql.server import playground
from cachegql.server.holder import IndexHolder
from cachegql.server.offload import Offloader
from cachegql.server.settings import Settings

__all__ = ["GraphQLApp"]


class GraphQLApp(GraphQL[Context, None]):
    """Each request is answered from the index current when it arrived."""

    def __init__(self, holder: IndexHolder, settings: Settings) -> None:
        self.offloader = Offloader()
        super().__init__(build_schema(settings.max_first, runner=self.offloader))
        self.holder = holder
        self.settings = settings

    async def get_context(self, request: Request | WebSocket, response: Any) -> Context:
        return Context(store=self.holder.store, max_first=self.settings.max_first)

    async def render_graphql_ide(self, request: Request) -> Response:
        return HTMLResponse(playground.page())
