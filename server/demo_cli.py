"""`cachegql demo-data`: synthetic pages, or a synthetic build cache (and its push)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cachegql.server.cli_flags import at_least

__all__ = ["add_demo_command"]


def add_demo_command(commands: Any) -> None:
    """Register `demo-data` on the `cachegql` subcommands: all its flags are here."""
    demo = commands.add_parser(
        "demo-data",
        help="write synthetic package pages, or a synthetic Spack build cache (deterministic)",
        description="Write realistic synthetic pages as _cache/<tag>/<package>/specs.md; with "
        "--mirror, a Spack build cache instead: a layout v3 mirror in DIR/mirror (views per "
        "stack, a spec manifest per binary), a v2 mirror per stack in DIR/stacks, and a "
        "listing of them in DIR/cache_spack_io_index.json. Same options, same bytes.",
    )
    demo.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder to write into")
    demo.add_argument(
        "--specs", type=at_least(int, 1), default=5000, metavar="N", help="specs (default 5000)"
    )
    demo.add_argument(
        "--packages",
        type=at_least(int, 1),
        default=200,
        metavar="N",
        help="packages they belong to (default 200)",
    )
    demo.add_argument(
        "--tags",
        default="develop,v0.23.0",
        help="comma-separated tag names (pages; a mirror has the first)",
    )
    demo.add_argument(
        "--seed", type=int, default=1, help="random seed: the same seed, the same bytes (default 1)"
    )
    demo.add_argument(
        "--mirror", action="store_true", help="write a Spack build cache instead of pages"
    )
    demo.add_argument(
        "--stacks",
        type=at_least(int, 0),
        default=10,
        metavar="N",
        help="stacks of the build cache besides root (default 10)",
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


def _demo(args: argparse.Namespace) -> int:
    from cachegql.demo import DemoConfig, write_pages

    tags = tuple(t.strip() for t in args.tags.split(",") if t.strip())
    try:
        if args.mirror:
            return _mirror(args, tags)
        config = DemoConfig(packages=args.packages, specs=args.specs, tags=tags, seed=args.seed)
        pages, specs = write_pages(config, args.out)
    except ValueError as exc:
        return _refused(exc, args)
    except OSError as exc:
        return _cannot_write(exc, args)
    print(f"wrote {pages} pages, {specs} specs to {args.out}")
    return 0


def _mirror(args: argparse.Namespace, tags: tuple[str, ...]) -> int:
    """`demo-data --mirror`: a build cache, an environment over it, pushed if asked."""
    from cachegql.demo import MirrorConfig, write_lockfile, write_mirror

    mirror = MirrorConfig(
        specs=args.specs,
        packages=args.packages,
        stacks=args.stacks,
        seed=args.seed,
        tag=tags[0] if tags else "develop",
    )
    summary = write_mirror(mirror, args.out)
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


def _refused(exc: ValueError, args: argparse.Namespace) -> int:
    """Numbers or tags the generator cannot use: said with what was given, exit 2 as
    for any bad argument."""
    given = f"--specs {args.specs}, --packages {args.packages}, --tags {args.tags!r}"
    if args.mirror:
        given += f", --stacks {args.stacks}"
    print(f"error: {exc} (given {given})", file=sys.stderr)
    return 2


def _cannot_write(exc: OSError, args: argparse.Namespace) -> int:
    where = exc.filename if exc.filename is not None else args.out
    print(f"error: cannot write the demo data to {where}: {exc.strerror or exc}", file=sys.stderr)
    return 1


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
