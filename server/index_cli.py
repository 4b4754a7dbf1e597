"""`cachegql index SOURCE... --out DIR`: build an index and publish it atomically (and
ship it, with --publish)."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachegql.server.cli_flags import ExamplesHelp, above, add_s3_endpoint, at_least, label
from cachegql.server.interrupts import Terminated, stop_signals_raise, stopped

if TYPE_CHECKING:
    from cachegql.index import SourceLimits

__all__ = ["add_index_command"]

INDEX_EXAMPLES = """\
examples:
  cachegql index _cache/ --out ./ix                       pages of cache.spack.io
  cachegql index mirror/ --tag develop --out ./ix         a local mirror (v2 or v3)
  cachegql index https://binaries.spack.io/develop --tag develop --out ./ix
  cachegql index cache_spack_io_index.json --out ./ix     a listing: tags and stacks
  cachegql index https://binaries.spack.io/cache_spack_io_index.json --out ./ix \\
    --map-url s3://spack-binaries/=https://binaries.spack.io/   its s3:// stacks read over https
  cachegql index oci://ghcr.io/spack/github-actions-buildcache --tag develop --out ./ix
  cachegql index s3://spack-binaries/develop --tag develop --out ./ix
"""


def add_index_command(commands: Any) -> None:
    """Register `index` on the `cachegql` subcommands: all its flags are here."""
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
        "cache_spack_io_index.json). Exit status: 0 published, 1 nothing published (the "
        "error says why), 2 bad arguments, 128 + N stopped by signal N.",
        epilog=INDEX_EXAMPLES,
        formatter_class=ExamplesHelp,
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
        type=label,
        help="the tag (snapshot) of a lone build cache (required for index files and mirrors; "
        "pages and listings name their own)",
    )
    index.add_argument(
        "--stack",
        metavar="LABEL",
        type=label,
        default="root",
        help="the stack label of a lone build cache's binaries (default: root)",
    )
    index.add_argument(
        "--timeout",
        type=above(float, 0),
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
        "since the build at --out is taken from it (docs/indexing/incremental.md)",
    )
    index.add_argument(
        "--lock-timeout",
        type=at_least(float, 0),
        default=600.0,
        metavar="SECONDS",
        help="one build of --out runs at a time: how long to wait for another to end before "
        "giving up (default 600; 0: give up at once)",
    )
    index.add_argument(
        "--map-url",
        action="append",
        default=[],
        type=_url_mapping,
        metavar="PREFIX=REPLACEMENT",
        help="read a listing's entries whose URL starts with PREFIX from REPLACEMENT instead "
        "(repeatable; the first that matches): binaries.spack.io's listing names its stacks "
        "by s3://spack-binaries/ URLs, which --map-url s3://spack-binaries/=https://"
        "binaries.spack.io/ reads over https, as cache.spack.io does",
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
        "every `cachegql serve --index s3://BUCKET/PREFIX` moves to it (docs/serving/replicas.md)",
    )
    add_s3_endpoint(index)
    _add_source_limits(index)
    index.set_defaults(run=_index)


def _url_mapping(text: str) -> tuple[str, str]:
    """`--map-url PREFIX=REPLACEMENT` as a pair (a URL holds no `=` before its path)."""
    prefix, equals, replacement = text.partition("=")
    if not equals or not prefix or not replacement:
        raise argparse.ArgumentTypeError(
            f"expected PREFIX=REPLACEMENT (e.g. s3://spack-binaries/=https://binaries.spack.io/), "
            f"got {text!r}"
        )
    return prefix, replacement


def _add_source_limits(index: argparse.ArgumentParser) -> None:
    """The flags of `LIMITS`, each with its default from `SourceLimits`."""
    from cachegql.index import LIMITS, SourceLimits, shown

    group = index.add_argument_group(
        "source limits", "what one source may cost (docs/indexing/remote.md)"
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
    from cachegql.server.cache_home import cache_folder
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
        with stop_signals_raise():
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
                url_map=tuple(args.map_url),
            )
    except StrictModeError as exc:
        print(f"error (--strict): {exc.problem}; nothing was published", file=sys.stderr)
        return 1
    except (BuildError, PublishError, SourceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Terminated) as exc:
        signum = signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM
        unchanged = _link(args.out) == published
        outcome = "; nothing was published" if unchanged else f" after publishing {args.out}"
        stopped(f"stopped by {signum.name}{outcome}")
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
