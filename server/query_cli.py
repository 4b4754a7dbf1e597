"""`cachegql query SPEC`: the specs matching a Spack spec, like `spack buildcache list -l`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cachegql.index import SpecCriteria

__all__ = ["add_query_command"]

# Specs read at a time while printing lines: memory stays bounded on a large result.
QUERY_BATCH = 1000


def add_query_command(commands: Any) -> None:
    """Register `query` on the `cachegql` subcommands: all its flags are here."""
    query = commands.add_parser(
        "query",
        help="list specs matching a Spack spec, like 'spack buildcache list -l'",
        description="Print the specs matching a Spack spec string (e.g. 'hdf5@1.14: +mpi "
        "%gcc@13 target=aarch64'), one a line: short hash, then the spec. Same engine as "
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

    try:
        if args.index is None:
            from cachegql.server.default_data import default_store

            store = default_store()  # opened once: built first if need be
        else:
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
            for s in snapshot.specs(rows, tarballs=False)
        ]
        json.dump(
            {"tag": snapshot.tag, "query": args.spec, "count": len(specs), "specs": specs},
            sys.stdout,
            indent=1,
        )
        sys.stdout.write("\n")
        return 0
    for start in range(0, len(rows), QUERY_BATCH):
        for spec in snapshot.specs(rows[start : start + QUERY_BATCH], tarballs=False):
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
