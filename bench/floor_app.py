"""The floor for HTTP numbers: a bare starlette endpoint answering a fixed JSON body.

Served by uvicorn exactly like cachegql, it shows what the web stack alone costs.
The body comes from the file named by BENCH_FLOOR_BODY (cachegql's own answer).
"""

from __future__ import annotations

import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

BODY = Path(os.environ.get("BENCH_FLOOR_BODY", "/dev/null")).read_bytes()


async def graphql(request: Request) -> Response:
    await request.body()
    return Response(BODY, media_type="application/json")


async def health(request: Request) -> Response:
    return Response(b'{"status":"ok"}', media_type="application/json")


app = Starlette(routes=[Route("/graphql", graphql, methods=["POST"]), Route("/healthz", health)])
