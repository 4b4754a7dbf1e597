"""The GraphQL schema: strawberry types, inputs and thin resolvers over `index`.

Nothing here knows about HTTP; `server/` mounts the schema on an ASGI app. This
module is the schema's front door: `server/` imports from here.
"""

from cachegql.schema.app import CachegqlSchema, Runner, build_schema, export_sdl, run_here
from cachegql.schema.context import Context
from cachegql.schema.direct import EXECUTIONS, Answer
from cachegql.schema.direct import STATS as COMPILED_STATS
from cachegql.schema.errors import (
    CHANGED_MESSAGE,
    INTERNAL_MESSAGE,
    INTERNAL_SERVER_ERROR,
    QUERY_TOO_COMPLEX,
)
from cachegql.schema.execution import FastExecutionContext
from cachegql.schema.limits import CONNECTION_FIELDS, DEFAULT_MAX_COST
from cachegql.schema.pagination import DEFAULT_FIRST, DEFAULT_MAX_FIRST

__all__ = [
    "CHANGED_MESSAGE",
    "COMPILED_STATS",
    "CONNECTION_FIELDS",
    "DEFAULT_FIRST",
    "DEFAULT_MAX_COST",
    "DEFAULT_MAX_FIRST",
    "EXECUTIONS",
    "INTERNAL_MESSAGE",
    "INTERNAL_SERVER_ERROR",
    "QUERY_TOO_COMPLEX",
    "Answer",
    "CachegqlSchema",
    "Context",
    "FastExecutionContext",
    "Runner",
    "build_schema",
    "export_sdl",
    "run_here",
]
