"""`cachegql serve`: the GraphQL API over HTTP (uvicorn), on an index or the demo data."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachegql.server.cli_flags import above, add_s3_endpoint, at_least, port

if TYPE_CHECKING:
    from starlette.types import ASGIApp

__all__ = ["add_serve_command"]

# The limits of `serve`: each a field of `Settings`, which holds its default.
_LIMIT_FLAGS: tuple[tuple[str, Callable[[str], float], str, str], ...] = (
    ("max_cost", at_least(int, 1), "N", "the price a query may have; above it, QUERY_TOO_COMPLEX"),
    ("time_budget", above(float, 0), "SECONDS", "how long a query may run before it is stopped"),
    ("threads", at_least(int, 1), "N", "threads per worker for queries that read at length"),
    ("max_body_bytes", at_least(int, 1), "BYTES", "the largest request body or GET query"),
    ("read_timeout", above(float, 0), "SECONDS", "how long a request's head, then body, may take"),
    (
        "max_requests",
        at_least(int, 0),
        "N",
        "GraphQL requests in progress per worker; beyond, 503; 0: no bound",
    ),
)


class _ServeHelp(argparse.HelpFormatter):
    """Shows each limit's default from `Settings`, imported only when help is printed
    (it brings in the schema, which every other command would pay for at start)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if action.dest in {name for name, *_ in _LIMIT_FLAGS}:
            from cachegql.server.settings import Settings

            default = next(f.default for f in fields(Settings) if f.name == action.dest)
            text = f"{text} (default {default})"
        return text


def add_serve_command(commands: Any) -> None:
    """Register `serve` on the `cachegql` subcommands: all its flags are here."""
    serve = commands.add_parser(
        "serve",
        formatter_class=_ServeHelp,
        help="serve the GraphQL API (and GraphiQL at /graphql)",
        description="Serve the GraphQL API at /graphql. Without --index, serves the embedded "
        "demo data set (built into the user cache on first start).",
    )
    serve.add_argument(
        "--index",
        metavar="DIR|s3://BUCKET/PREFIX",
        help="index built by 'cachegql index', or the store its builds are shipped to "
        "(`cachegql index --publish`): the newest build is pulled, verified and served, "
        "and looked for again every --reload-interval",
    )
    add_s3_endpoint(serve)
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    serve.add_argument("--port", type=port, default=8000, help="port (default 8000)")
    serve.add_argument("--default-tag", metavar="TAG", help="tag used when a query names none")
    serve.add_argument(
        "--workers", type=at_least(int, 1), default=1, help="worker processes (default 1)"
    )
    serve.add_argument(
        "--shared-socket",
        action="store_true",
        help="with several workers, let them accept from one shared socket (uvicorn's way) "
        "rather than a socket each on the same port, among which the kernel spreads new "
        "connections (the default on Linux; docs/serving/http.md)",
    )
    serve.add_argument(
        "--max-first",
        type=at_least(int, 1),
        metavar="N",
        help="cap on 'first', the page size of connections (default: the API's, 100)",
    )
    serve.add_argument(
        "--no-access-log", action="store_true", help="do not log each request (saves CPU)"
    )
    serve.add_argument(
        "--no-compiled",
        action="store_true",
        help="answer every query through strawberry and graphql-core, not compiled plans "
        "(the reference path; slower)",
    )
    serve.add_argument(
        "--no-inline",
        action="store_true",
        help="run every operation with a connection in a worker thread, however cheap its "
        "price and the rows it reads (docs/serving/limits.md)",
    )
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="access log lines as text, or one JSON object per request (default text)",
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let pages of ORIGIN (e.g. https://app.example.org) call the API from a browser; "
        "repeatable; '*' for any origin; off by default",
    )
    serve.add_argument(
        "--cache-max-age",
        type=at_least(int, 0),
        default=60,
        metavar="SECONDS",
        help="Cache-Control max-age of GET answers, for browsers and CDNs (default 60; "
        "0: no-cache)",
    )
    serve.add_argument(
        "--gzip-min-bytes",
        type=at_least(int, 0),
        default=1024,
        metavar="BYTES",
        help="gzip answers at least this long when the client accepts it (default 1024; 0: never)",
    )
    serve.add_argument(
        "--persisted-queries",
        type=at_least(int, 0),
        default=10_000,
        metavar="N",
        help="automatic persisted queries remembered per worker (default 10000)",
    )
    serve.add_argument(
        "--response-cache-mb",
        type=at_least(float, 0),
        default=64.0,
        metavar="MB",
        help="memory for repeated identical requests' answers, per worker; 0 turns it off "
        "(default 64)",
    )
    serve.add_argument(
        "--reload-interval",
        type=at_least(float, 0),
        default=2.0,
        metavar="SECONDS",
        help="how often to look for a newly published index; 0 turns it off (default 2)",
    )
    limits = serve.add_argument_group("limits", "what one request may ask (docs/serving/limits.md)")
    for name, kind, metavar, text in _LIMIT_FLAGS:
        flag = "--" + name.replace("_", "-")
        limits.add_argument(flag, type=kind, default=None, metavar=metavar, help=text)
    serve.set_defaults(run=_serve)


def _serve(args: argparse.Namespace) -> int:
    from uvicorn.config import STARTUP_FAILURE

    from cachegql.index import IndexLoadError, IndexStore
    from cachegql.schema import DEFAULT_MAX_FIRST
    from cachegql.server.access_log import LOG_FORMAT, configure_logger
    from cachegql.server.listen import CannotListenError, WorkerStartError, run
    from cachegql.server.protocol import protocol
    from cachegql.server.settings import Settings

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    puller = None
    if args.index is None:
        print("no --index given: serving the embedded demo data", file=sys.stderr)
        index = None
    elif args.index.startswith("s3://"):
        from cachegql.server.shipping import ShippingError, pulled

        try:
            index, puller = pulled(args.index, args.s3_endpoint_url)
        except (ShippingError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    else:
        index = Path(args.index)
    try:
        if index is None:
            from cachegql.server.default_data import default_store

            store = default_store()  # opened once: built first if need be
            index = store.path
        else:
            store = IndexStore(index)  # fail here, clearly, not in a worker
        if args.default_tag is not None:
            store.use_default_tag(args.default_tag)
    except IndexLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    settings = Settings(
        index=index,
        default_tag=args.default_tag,
        max_first=DEFAULT_MAX_FIRST if args.max_first is None else args.max_first,
        reload_interval=args.reload_interval,
        response_cache_mb=args.response_cache_mb,
        cache_max_age=args.cache_max_age,
        cors_origins=tuple(args.cors_origin),
        gzip_min_bytes=args.gzip_min_bytes,
        persisted_queries=args.persisted_queries,
        log_format=args.log_format,
        access_log=not args.no_access_log,
        compiled=not args.no_compiled,
        inline=not args.no_inline,
        **{
            name: getattr(args, name)
            for name, *_ in _LIMIT_FLAGS
            if getattr(args, name) is not None
        },
    )
    os.environ.update(settings.to_env())

    def say_where() -> None:
        print(f"GraphiQL and the API: http://{args.host}:{args.port}/graphql", file=sys.stderr)

    from cachegql.server.metrics import multiprocess_folder

    # Several workers share their counters through a folder (prometheus-client's
    # multiprocess mode), made before uvicorn starts them and removed when it stops.
    if puller is not None and args.reload_interval > 0:
        puller.start(args.reload_interval)
    with multiprocess_folder(args.workers):
        if args.workers <= 1:  # as uvicorn counts them
            # One worker runs in this process: it serves the store just opened, which
            # workers in processes of their own would each open again.
            from cachegql.server.app import create_app

            configure_logger(settings.log_format)
            served: ASGIApp | str = create_app(settings, store)
        else:
            store.close()
            del store  # the workers load their own: this process must not hold it too
            served = "cachegql.server.app:app_from_env"
        try:
            run(
                served,
                socket_per_worker=not args.shared_socket,
                on_listening=say_where,
                factory=args.workers > 1,
                host=args.host,
                port=args.port,
                workers=args.workers,
                loop="uvloop",
                http=protocol(settings.read_timeout),
                log_level="info",
                access_log=False,  # the app logs each request itself (server/access_log.py)
            )
        except (CannotListenError, WorkerStartError) as exc:
            # The exit status uvicorn gives when it cannot bind.
            print(f"error: {exc}", file=sys.stderr)
            return STARTUP_FAILURE
    return 0
