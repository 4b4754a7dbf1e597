"""The GraphiQL playground at GET /graphql (for browsers).

TO BE REPLACED (issue 11): GraphiQL served from assets that ship with cachegql, so that no
request leaves the server's origin. Until then, strawberry's page (which loads from a CDN).
"""

from __future__ import annotations

from starlette.routing import BaseRoute
from strawberry.http.ides import get_graphql_ide_html

__all__ = ["page", "routes"]


def page() -> str:
    """The HTML of the playground."""
    return get_graphql_ide_html(graphql_ide="graphiql")


def routes() -> list[BaseRoute]:
    """The routes of the playground's assets."""
    return []
