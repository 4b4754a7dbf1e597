"""`cachegql check spack.lock`: how much of an environment a build cache holds.

Prints, per root of the lockfile and overall, how many of its concrete specs the tag
holds (by full hash), then each missing spec with its nearest binaries and how each
differs. Exit status: 0 every spec cached, 1 some missing, 2 bad input (a lockfile or
an index that cannot be read, an unknown tag; a node of the lockfile that cannot be
read is named, the rest is still checked, and the status is 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cachegql.server.cli_flags import ExamplesHelp, at_least

__all__ = ["add_check_command"]

EXIT_CACHED, EXIT_MISSING, EXIT_BAD_INPUT = 0, 1, 2
EXAMPLES = """\
examples:
  cachegql check spack.lock --index ./ix --tag develop
  cachegql check spack.lock --json | jq '.specs[] | select(.cached | not)'
  spack -e . concretize && cachegql check spack.lock --nearest 1
"""


def add_check_command(commands: Any) -> None:
    """Register `check` on the `cachegql` subcommands."""
    check = commands.add_parser(
        "check",
        help="how much of a Spack environment (spack.lock) the cache holds, and why not the rest",
        description="Look up every concrete spec of a Spack lockfile (versions 1 to 6) by its "
        "full hash; print coverage per root and overall, and for each missing spec the "
        "nearest binaries of its package with their differences. Exit status: 0 all "
        "cached, 1 some missing, 2 bad input.",
        epilog=EXAMPLES,
        formatter_class=ExamplesHelp,
    )
    check.add_argument("lockfile", type=Path, metavar="LOCKFILE", help="spack.lock ('-': stdin)")
    check.add_argument(
        "--index", type=Path, metavar="DIR", help="index to ask (default: the demo data)"
    )
    check.add_argument("--tag", help="tag to ask (default: the index's default tag)")
    check.add_argument(
        "--nearest",
        type=at_least(int, 0),
        default=3,
        metavar="N",
        help="nearest binaries per miss (3)",
    )
    check.add_argument("--json", action="store_true", help="print JSON instead of text")
    check.set_defaults(run=_check)


def _check(args: argparse.Namespace) -> int:
    from cachegql.index import (
        CriteriaError,
        IndexLoadError,
        IndexStore,
        check_environment,
        read_lockfile,
    )

    source = "<stdin>" if str(args.lockfile) == "-" else str(args.lockfile)
    try:
        data = sys.stdin.buffer.read() if source == "<stdin>" else args.lockfile.read_bytes()
    except OSError as exc:
        print(f"error: {source}: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        lockfile = read_lockfile(data, source)
        if args.index is None:
            from cachegql.server.default_data import default_store

            store = default_store()  # opened once: built first if need be
        else:
            store = IndexStore(args.index)
        coverage = check_environment(store.snapshot(args.tag), lockfile, max(0, args.nearest))
    except (IndexLoadError, CriteriaError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for problem in lockfile.problems:
        print(f"error: {problem}", file=sys.stderr)
    if args.json:
        json.dump(_as_json(source, lockfile.version, coverage), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        _print(source, lockfile.version, coverage)
    if lockfile.problems:
        return EXIT_BAD_INPUT
    return EXIT_CACHED if coverage.cached == coverage.total else EXIT_MISSING


def _percent(cached: int, total: int) -> str:
    return f"{100 * cached // total}%" if total else "-"


def _print(source: str, version: int, coverage: Any) -> None:
    externals = f", {coverage.externals} external" if coverage.externals else ""
    print(
        f"{source} (lockfile v{version}): {len(coverage.specs)} specs{externals}; "
        f"tag {coverage.tag}"
    )
    width = max([len(r.spec) for r in coverage.roots] + [7])
    for root in coverage.roots:
        cached = f"{root.cached}/{root.total}"
        print(f"  {root.spec:<{width}}  {cached:>9} cached  {_percent(root.cached, root.total):>4}")
    overall = f"{coverage.cached}/{coverage.total}"
    total_percent = _percent(coverage.cached, coverage.total)
    print(f"  {'overall':<{width}}  {overall:>9} cached  {total_percent:>4}")
    for spec in coverage.specs:
        if spec.cached or spec.external:
            continue
        print(f"\nmissing {spec.text}")
        if not spec.nearest:
            print(f"  no binary of {spec.name} in {coverage.tag}")
        for near in spec.nearest:
            print(f"  nearest /{near.spec.hash[:7]} {_format(near.spec)}")
            for difference in near.differences or ():
                print(f"    - {difference.text}")
            if not near.differences:
                print("    - the same spec under another hash")


def _format(spec: Any) -> str:
    from cachegql.index import format_spec

    return format_spec(spec, with_hash=False)


def _as_json(source: str, version: int, coverage: Any) -> dict[str, Any]:
    return {
        "lockfile": source,
        "lockfileVersion": version,
        "tag": coverage.tag,
        "total": coverage.total,
        "cached": coverage.cached,
        "externals": coverage.externals,
        "roots": [
            {"spec": r.spec, "hash": r.hash, "total": r.total, "cached": r.cached}
            for r in coverage.roots
        ],
        "specs": [
            {
                "hash": s.hash,
                "name": s.name,
                "format": s.text,
                "cached": s.cached,
                "external": s.external,
                "nearest": [
                    {
                        "hash": n.spec.hash,
                        "format": _format(n.spec),
                        "usable": n.usable,
                        "differences": [d.text for d in n.differences],
                    }
                    for n in s.nearest
                ],
            }
            for s in coverage.specs
        ],
    }
