"""The `cachegql` command: build indexes, serve them, generate demo data, print the schema."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from cachegql.server.check_cli import add_check_command
from cachegql.server.version import VERSION

if TYPE_CHECKING:
    from cachegql.index import SourceLimits, SpecCriteria

__all__ = ["main"]

QUERY_BATCH = 1000
INDEX_EXAMPLES = """\
examples:
  cachegql index _cache/ --out ./ix                       pages of cache.spack.io
  cachegql index mirror/ --tag develop --out ./ix         a local mirror (v2 or v3)
  cachegql index https://binaries.spack.io/develop --tag develop --out ./ix
  cachegql index cache_spack_io_index.json --out ./ix     a listing: tags and stacks
  cachegql index oci://ghcr.io/spack/github-actions-buildcache --tag develop --out ./ix
  cachegql index s3://spack-binaries/develop --tag develop --out ./ix
"""
EXAMPLES = """\
examples:
  cachegql serve                                   serve the embedded demo data on :8000
  cachegql index _cache/ --out ./ix                index a checkout of cache.spack.io's _cache/
  cachegql serve --index ./ix --port 8080          serve it; rebuilds are picked up live
  cachegql query 'hdf5@1.14: +mpi %gcc@13 target=aarch64' --index ./ix
  cachegql check spack.lock --index ./ix            how much of an environment is cached
  cachegql demo-data --specs 1000000 --out /tmp/pages
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        code: int = args.run(args)
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        _stopped("interrupted")
        return 128 + signal.SIGINT
    return code


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread as Python raises KeyboardInterrupt for SIGINT,
    so that both unwind the same way: `finally` blocks and context managers run (a build
    removes its staging folder and releases its lock) instead of the process vanishing."""


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Turn SIGTERM into `_Terminated` for the block (unless it is ignored, as the
    parent asked, or this is not the main thread, which alone receives signals)."""
    previous = signal.getsignal(signal.SIGTERM)
    if previous == signal.SIG_IGN or threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise _Terminated

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stopped(message: str) -> None:
    """One line on stderr, on a line of its own even after a progress bar or '^C'."""
    print(("\n" if sys.stderr.isatty() else "") + message, file=sys.stderr)


# The limits of `serve`: each a field of `Settings`, which holds its default.
_LIMIT_FLAGS: tuple[tuple[str, type, str, str], ...] = (
    ("max_cost", int, "N", "the price a query may have; above it, QUERY_TOO_COMPLEX"),
    ("time_budget", float, "SECONDS", "how long a query may run before it is stopped"),
    ("threads", int, "N", "threads per worker for queries that read the index at length"),
    ("max_body_bytes", int, "BYTES", "the largest request body or GET query string"),
    ("read_timeout", float, "SECONDS", "how long a request's head, then its body, may take"),
    ("max_requests", int, "N", "GraphQL requests in progress per worker; beyond, 503"),
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cachegql",
        description="GraphQL gateway and search index over Spack build-cache listings.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"cachegql {VERSION}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    index = commands.add_parser(
        "index",
        help="build an index from package pages and Spack build caches",
        description="Read the sources and publish a new index at --out atomically: a failed "
        "build leaves the previous index in place. A source is a local path, an http(s) "
        "URL, an OCI repository (oci://HOST/REPO, as Spack pushes build caches there) or an "
        "S3 URL (s3://BUCKET/PREFIX), recognised by content: cache.spack.io package pages "
        "(files, or folders searched recursively), a Spack build-cache index file (index.json, "
        "database versions 5 to 9), a spec file, a mirror root (layout v3, or v2 with or "
        "without an index), or a listing of build caches by tag and stack (binaries.spack.io's "
        "cache_spack_io_index.json).",
        epilog=INDEX_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    index.add_argument(
        "sources",
        nargs="+",
        metavar="SOURCE",
        help="page file or folder, index file, spec file, mirror root or listing; path or URL",
    )
    index.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="index path to publish"
    )
    index.add_argument(
        "--tag",
        metavar="TAG",
        help="the tag (snapshot) of a lone build cache (required for index files and mirrors; "
        "pages and listings name their own)",
    )
    index.add_argument(
        "--stack",
        metavar="LABEL",
        default="root",
        help="the stack label of a lone build cache's binaries (default: root)",
    )
    index.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="for URLs: seconds to wait for a connection or for data (default 30); "
        "transient failures are retried 3 times",
    )
    index.add_argument(
        "--oci-username-variable",
        metavar="VAR",
        help="for oci:// sources: the environment variable holding the registry username "
        "(default: ~/.docker/config.json's, else anonymous)",
    )
    index.add_argument(
        "--oci-password-variable",
        metavar="VAR",
        help="for oci:// sources: the environment variable holding the password or token",
    )
    index.add_argument(
        "--strict", action="store_true", help="fail on the first problem instead of reporting it"
    )
    index.add_argument(
        "--full",
        action="store_true",
        help="read every source again; by default a tag whose build caches did not change "
        "since the build at --out is taken from it (docs/indexing-incremental.md)",
    )
    index.add_argument(
        "--lock-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="one build of --out runs at a time: how long to wait for another to end before "
        "giving up (default 600; 0: give up at once)",
    )
    index.add_argument("--quiet", "-q", action="store_true", help="print only the summary line")
    index.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also list files skipped as not pages, and each redirect followed",
    )
    index.add_argument(
        "--publish",
        metavar="s3://BUCKET/PREFIX",
        help="after publishing at --out, ship the build to this store and point it there: "
        "every `cachegql serve --index s3://BUCKET/PREFIX` moves to it (README: Running "
        "several replicas)",
    )
    _add_s3_endpoint(index)
    _add_source_limits(index)
    index.set_defaults(run=_index)

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
    _add_s3_endpoint(serve)
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--default-tag", metavar="TAG", help="tag used when a query names none")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    serve.add_argument(
        "--max-first",
        type=int,
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
        type=int,
        default=60,
        metavar="SECONDS",
        help="Cache-Control max-age of GET answers, for browsers and CDNs (default 60; "
        "0: no-cache)",
    )
    serve.add_argument(
        "--gzip-min-bytes",
        type=int,
        default=1024,
        metavar="BYTES",
        help="gzip answers at least this long when the client accepts it (default 1024; 0: never)",
    )
    serve.add_argument(
        "--persisted-queries",
        type=int,
        default=10_000,
        metavar="N",
        help="automatic persisted queries remembered per worker (default 10000)",
    )
    serve.add_argument(
        "--response-cache-mb",
        type=float,
        default=64.0,
        metavar="MB",
        help="memory for repeated identical requests' answers, per worker; 0 turns it off "
        "(default 64)",
    )
    serve.add_argument(
        "--reload-interval",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often to look for a newly published index; 0 turns it off (default 2)",
    )
    limits = serve.add_argument_group("limits", "what one request may ask (README: Limits)")
    for name, kind, metavar, text in _LIMIT_FLAGS:
        flag = "--" + name.replace("_", "-")
        limits.add_argument(flag, type=kind, default=None, metavar=metavar, help=text)
    serve.set_defaults(run=_serve)

    demo = commands.add_parser(
        "demo-data",
        help="write synthetic package pages, or a synthetic Spack build cache (deterministic)",
        description="Write realistic synthetic pages as _cache/<tag>/<package>/specs.md; with "
        "--mirror, a Spack build cache instead: a layout v3 mirror in DIR/mirror (views per "
        "stack, a spec manifest per binary), a v2 mirror per stack in DIR/stacks, and a "
        "listing of them in DIR/cache_spack_io_index.json. Same options, same bytes.",
    )
    demo.add_argument("--out", required=True, type=Path, metavar="DIR")
    demo.add_argument("--specs", type=int, default=5000)
    demo.add_argument("--packages", type=int, default=200)
    demo.add_argument(
        "--tags",
        default="develop,v0.23.0",
        help="comma-separated tag names (pages; a mirror has the first)",
    )
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument(
        "--mirror", action="store_true", help="write a Spack build cache instead of pages"
    )
    demo.add_argument(
        "--stacks", type=int, default=10, help="stacks of the build cache besides root"
    )
    demo.add_argument(
        "--push-to",
        metavar="URL",
        help="with --mirror, also publish it: oci://HOST/REPO (each stack's index as an "
        "index.spack image; oci+http:// without TLS) or s3://BUCKET/PREFIX (every file)",
    )
    demo.add_argument("--oci-username-variable", metavar="VAR", help="see `index`")
    demo.add_argument("--oci-password-variable", metavar="VAR", help="see `index`")
    demo.add_argument("--s3-endpoint-url", metavar="URL", help="see `index`")
    demo.set_defaults(run=_demo)

    query = commands.add_parser(
        "query",
        help="list specs matching a Spack spec, like 'spack buildcache list -l'",
        description="Print the specs matching a Spack spec string (e.g. 'hdf5@1.14: +mpi "
        "%%gcc@13 target=aarch64'), one a line: short hash, then the spec. Same engine as "
        "the API's specs(query:).",
    )
    query.add_argument("spec", metavar="SPEC", help="spec string; quote it in the shell")
    query.add_argument(
        "--index", type=Path, metavar="DIR", help="index to ask (default: the demo data)"
    )
    query.add_argument("--tag", help="tag to ask (default: the index's default tag)")
    query.add_argument("--json", action="store_true", help="print JSON instead of lines")
    query.add_argument(
        "--runs-on",
        metavar="TARGET",
        help="only binaries that run on this microarchitecture (archspec), or on this "
        "machine with 'host'",
    )
    query.set_defaults(run=_query)
    add_check_command(commands)

    schema = commands.add_parser("schema", help="print the GraphQL schema (SDL)")
    schema.add_argument(
        "--check", type=Path, metavar="FILE", help="exit 1 if FILE differs from the schema"
    )
    schema.set_defaults(run=_schema)
    return parser


def _add_s3_endpoint(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--s3-endpoint-url",
        metavar="URL",
        help="for s3:// sources and stores: an S3-compatible store's endpoint (MinIO, Ceph, "
        "R2); default: AWS, or AWS_ENDPOINT_URL_S3; credentials from boto3's chain (AWS_* "
        "variables, profile, role), else requests are unsigned",
    )


def _add_source_limits(index: argparse.ArgumentParser) -> None:
    """The flags of `LIMITS`, each with its default from `SourceLimits`."""
    from cachegql.index import LIMITS, SourceLimits, shown

    group = index.add_argument_group(
        "source limits", "what one source may cost (README: Index a Spack mirror)"
    )
    defaults = SourceLimits()
    for limit in LIMITS:
        default = getattr(defaults, limit.field)
        group.add_argument(
            limit.flag,
            dest=limit.field,
            type=_size if limit.field == "max_bytes" else _positive(type(default)),
            default=None,
            metavar=limit.metavar,
            help=f"{limit.help} (default {shown(default)})",
        )


def _source_limits(args: argparse.Namespace) -> SourceLimits:
    from cachegql.index import LIMITS, SourceLimits

    given = {limit.field: getattr(args, limit.field) for limit in LIMITS}
    return SourceLimits(**{name: value for name, value in given.items() if value is not None})


_UNITS = {"": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "mb": 10**6, "mib": 1 << 20}
_UNITS |= {"gb": 10**9, "gib": 1 << 30}


def _size(text: str) -> int:
    """A size in bytes: `1073741824`, `1GiB`, `500MB`, `64KiB`."""
    digits = text.strip().rstrip("bBiIkKmMgG")
    unit = text.strip()[len(digits) :].lower()
    try:
        size = int(float(digits) * _UNITS[unit])
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a size: give bytes, or a number with KB, MB, GB, KiB, MiB or GiB"
        ) from None
    if size <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be positive")
    return size


def _positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be positive")
        return value

    return parse


def _tell_redirect(hop: str) -> None:
    print(f"redirect: {hop}", file=sys.stderr)


def _index(args: argparse.Namespace) -> int:
    from cachegql.index import BuildError, PublishError, SourceError, StrictModeError, build_index
    from cachegql.server.default_data import cache_folder
    from cachegql.server.progress import ProgressBar, download_bar
    from cachegql.server.remote import RemoteOptions, RemoteReader

    progress = None if args.quiet else ProgressBar("reading sources")
    limits = _source_limits(args)
    reader = RemoteReader(
        RemoteOptions(
            cache_folder() / "fetch",
            timeout=args.timeout,
            limits=limits,
            oci_username_variable=args.oci_username_variable,
            oci_password_variable=args.oci_password_variable,
            s3_endpoint_url=args.s3_endpoint_url,
            progress=None if args.quiet else download_bar,
            on_redirect=_tell_redirect if args.verbose and not args.quiet else None,
        )
    )
    published = _link(args.out)
    try:
        with _sigterm_raises():
            report = build_index(
                args.sources,
                args.out,
                strict=args.strict,
                tag=args.tag,
                stack=args.stack,
                reader=reader,
                limits=limits,
                on_progress=progress,
                lock_timeout=args.lock_timeout,
                on_wait=None if args.quiet else _tell,
                full=args.full,
            )
    except StrictModeError as exc:
        print(f"error (--strict): {exc.problem}; nothing was published", file=sys.stderr)
        return 1
    except (BuildError, PublishError, SourceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Terminated) as exc:
        signum = signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM
        unchanged = _link(args.out) == published
        outcome = "; nothing was published" if unchanged else f" after publishing {args.out}"
        _stopped(f"stopped by {signum.name}{outcome}")
        return 128 + signum
    finally:
        reader.close()
    if not args.quiet:
        for problem in report.problems:
            print(f"problem: {problem}", file=sys.stderr)
        if args.verbose:
            for skipped in report.skipped:
                print(f"skipped: {skipped}", file=sys.stderr)
        for tag, count in report.tags.items():
            print(f"  {tag}: {count} specs", file=sys.stderr)
        if report.skipped:
            print(
                f"  {len(report.skipped)} files skipped as not pages (-v lists them)",
                file=sys.stderr,
            )
    print(report.summary())
    if args.publish:
        return _ship(report.folder, args.publish, args.s3_endpoint_url)
    return 0


def _ship(build: Path, url: str, endpoint_url: str | None) -> int:
    import time

    from cachegql.server.shipping import ShippingError, Store, ship

    started = time.monotonic()
    try:
        pointer = ship(build, Store(url, endpoint_url))
    except (ShippingError, OSError) as exc:
        print(f"error: {exc}; the build is published at --out, not shipped", file=sys.stderr)
        return 1
    print(
        f"shipped build {pointer.build_id} to {url} ({pointer.files} files, "
        f"{pointer.size / 1e6:.1f} MB) in {time.monotonic() - started:.1f} s"
    )
    return 0


def _link(out: Path) -> str | None:
    """Where the index link points now, to tell whether a build published."""
    try:
        return str(out.readlink())
    except OSError:
        return None


def _tell(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from cachegql.index import IndexLoadError, IndexStore
    from cachegql.schema import DEFAULT_MAX_FIRST
    from cachegql.server.protocol import protocol
    from cachegql.server.settings import Settings

    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    puller = None
    if args.index is None:
        from cachegql.server.default_data import default_index

        print("no --index given: serving the embedded demo data", file=sys.stderr)
        index = default_index()
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
        IndexStore(index, args.default_tag).close()  # fail here, clearly, not in a worker
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
        **{
            name: getattr(args, name)
            for name, *_ in _LIMIT_FLAGS
            if getattr(args, name) is not None
        },
    )
    os.environ.update(settings.to_env())
    print(f"GraphiQL and the API: http://{args.host}:{args.port}/graphql", file=sys.stderr)
    from cachegql.server.metrics import multiprocess_folder

    # Several workers share their counters through a folder (prometheus-client's
    # multiprocess mode), made before uvicorn starts them and removed when it stops.
    if puller is not None and args.reload_interval > 0:
        puller.start(args.reload_interval)
    with multiprocess_folder(args.workers):
        uvicorn.run(
            "cachegql.server.app:app_from_env",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            loop="uvloop",
            http=protocol(settings.read_timeout),
            log_level="info",
            access_log=False,  # the app logs each request itself (server/access_log.py)
        )
    return 0


def _demo(args: argparse.Namespace) -> int:
    from cachegql.demo import DemoConfig, MirrorConfig, write_lockfile, write_mirror, write_pages

    tags = tuple(t.strip() for t in args.tags.split(",") if t.strip())
    if args.mirror:
        mirror = MirrorConfig(
            specs=args.specs,
            packages=args.packages,
            stacks=args.stacks,
            seed=args.seed,
            tag=tags[0] if tags else "develop",
        )
        try:
            summary = write_mirror(mirror, args.out)
        except (ValueError, FileExistsError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(
            f"wrote a build cache of {summary.specs} specs ({summary.nodes} DAG nodes, "
            f"{summary.edges} edges, {len(summary.stacks)} stacks) to {summary.mirror}; "
            f"its listing: {summary.listing}"
        )
        pinned, cached = write_lockfile(summary.mirror, args.out, seed=args.seed)
        print(
            f"and an environment over it: {args.out / 'spack.lock'} ({pinned} specs, "
            f"{cached} of them in the cache; try `cachegql check`)"
        )
        return _push(args, summary.stacks, summary.tag) if args.push_to else 0
    config = DemoConfig(packages=args.packages, specs=args.specs, tags=tags, seed=args.seed)
    pages, specs = write_pages(config, args.out)
    print(f"wrote {pages} pages, {specs} specs to {args.out}")
    return 0


def _push(args: argparse.Namespace, stacks: Sequence[tuple[str, int]], tag: str) -> int:
    """`demo-data --mirror --push-to URL`: the mirror just written, published there."""
    from cachegql.index import ReadError
    from cachegql.server.oci import OciReader
    from cachegql.server.push import push_oci, push_s3

    url: str = args.push_to
    try:
        if url.startswith(("oci://", "oci+http://")):
            with contextlib.closing(
                OciReader(
                    None,
                    username_variable=args.oci_username_variable,
                    password_variable=args.oci_password_variable,
                )
            ) as reader:
                listing = push_oci(reader, args.out, url, [label for label, _ in stacks], tag)
            print(f"pushed {len(stacks)} index.spack images to {url}; their listing: {listing}")
        elif url.startswith("s3://"):
            count = push_s3(args.out, url, args.s3_endpoint_url)
            print(f"uploaded {count} files to {url}")
        else:
            print(f"error: --push-to {url}: expected oci://, oci+http:// or s3://", file=sys.stderr)
            return 1
    except ReadError as exc:
        print(f"error: cannot push: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # boto3's errors (no bucket, refused) have no common base here
        print(f"error: cannot push to {url}: {exc}", file=sys.stderr)
        return 1
    return 0


def _query(args: argparse.Namespace) -> int:
    import json

    from cachegql.index import (
        SHORT_HASH_LENGTH,
        CriteriaError,
        IndexLoadError,
        IndexStore,
        find_specs,
        format_spec,
    )

    if args.index is None:
        from cachegql.server.default_data import default_index

        args.index = default_index()
    try:
        store = IndexStore(args.index)
        snapshot = store.snapshot(args.tag)
        rows = find_specs(snapshot, _runs_on(args.runs_on), query=args.spec)
    except (IndexLoadError, CriteriaError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        specs = [
            {
                "hash": s.hash,
                "name": s.package,
                "version": s.version,
                "compiler": s.compiler.normalized,
                "os": s.os,
                "platform": s.platform,
                "target": s.target,
                "variants": [v.raw for v in s.variants],
                "stacks": list(s.stacks),
                "format": format_spec(s),
            }
            for s in snapshot.specs(rows)
        ]
        json.dump(
            {"tag": snapshot.tag, "query": args.spec, "count": len(specs), "specs": specs},
            sys.stdout,
            indent=1,
        )
        sys.stdout.write("\n")
        return 0
    for start in range(0, len(rows), QUERY_BATCH):
        for spec in snapshot.specs(rows[start : start + QUERY_BATCH]):
            print(f"{spec.hash[:SHORT_HASH_LENGTH]} {format_spec(spec, with_hash=False)}")
    print(
        f"==> {len(rows)} matching spec{'' if len(rows) == 1 else 's'} in {snapshot.tag}",
        file=sys.stderr,
    )
    return 0


def _runs_on(target: str | None) -> SpecCriteria | None:
    """The criteria of `--runs-on`: binaries for `target` ('host': this machine's) or for
    one of its ancestors."""
    from cachegql.index import SpecCriteria, StringMatch, host_target, runs_on

    if target is None:
        return None
    name = host_target() if target == "host" else target
    return SpecCriteria(fields=(("target", StringMatch(in_=runs_on(name))),))


def _schema(args: argparse.Namespace) -> int:
    from cachegql.schema import export_sdl

    sdl = export_sdl()
    if args.check is None:
        sys.stdout.write(sdl)
        return 0
    if args.check.read_text() != sdl:
        print(
            f"{args.check} is stale: regenerate it with 'cachegql schema > {args.check}'",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
