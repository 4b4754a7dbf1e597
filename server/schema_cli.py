"""`cachegql schema`: print the GraphQL schema (SDL), or check a file against it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_schema_command"]


def add_schema_command(commands: Any) -> None:
    """Register `schema` on the `cachegql` subcommands."""
    schema = commands.add_parser(
        "schema",
        help="print the GraphQL schema (SDL)",
        description="Print the API's GraphQL schema (SDL) on stdout, as clients and code "
        "generators read it; --check compares it with a file (CI keeps schema/schema.graphql "
        "up to date so).",
    )
    schema.add_argument(
        "--check", type=Path, metavar="FILE", help="exit 1 if FILE differs from the schema"
    )
    schema.set_defaults(run=_schema)


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
