"""The floor for HTTP numbers: a bare starlette endpoint answering a fixed JSON body.

Served by uvicorn exactly like cachegql (`python -m bench.floor_app --port P --workers N`,
from the repository's root: the same event loop and HTTP parser, several workers listening
as `cachegql serve`'s do), it shows what the web stack alone costs. The body comes from the
file named by BENCH_FLOOR_BODY (cachegql's own answer).
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    from cachegql.server import listen

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--shared-socket", action="store_true", help="as `cachegql serve`'s")
    args = parser.parse_args()
    listen.run(
        "bench.floor_app:app",
        socket_per_worker=not args.shared_socket,
        port=args.port,
        workers=args.workers,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
