"""The `cachegql` command: its parser, assembled from one module per subcommand
(`*_cli.py`: build indexes, serve them, generate demo data, query, check, print the schema)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from cachegql.server.check_cli import add_check_command
from cachegql.server.cli_flags import ExamplesHelp
from cachegql.server.demo_cli import add_demo_command
from cachegql.server.index_cli import add_index_command
from cachegql.server.interrupts import stopped
from cachegql.server.query_cli import add_query_command
from cachegql.server.schema_cli import add_schema_command
from cachegql.server.serve_cli import add_serve_command
from cachegql.server.version import installed_version

__all__ = ["main"]

EXAMPLES = """\
examples:
  cachegql serve                                   serve the embedded demo data on :8000
  cachegql index _cache/ --out ./ix                index a checkout of cache.spack.io's _cache/
  cachegql serve --index ./ix --port 8080          serve it; rebuilds are picked up live
  cachegql query 'hdf5@1.14: +mpi %gcc@13 target=aarch64' --index ./ix
  cachegql check spack.lock --index ./ix           how much of an environment is cached
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
        # The reader (e.g. `| head`) went away: stop quietly, with the status of a tool
        # that SIGPIPE ended, not 0: the output was cut, and `check`'s own status (specs
        # missing, bad input) was never reached.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        stopped("interrupted")
        return 128 + signal.SIGINT
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cachegql",
        description="GraphQL gateway and search index over Spack build-cache listings.",
        epilog=EXAMPLES,
        formatter_class=ExamplesHelp,
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    add_index_command(commands)
    add_serve_command(commands)
    add_demo_command(commands)
    add_query_command(commands)
    add_check_command(commands)
    add_schema_command(commands)
    return parser


class _Version(argparse.Action):
    """`--version`: as argparse's own, the version read only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="show the version and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        # On stdout, a failed write ignored (a closed pipe, a full disk), as argparse's.
        with contextlib.suppress(OSError):
            print(f"cachegql {installed_version()}", flush=True)
        parser.exit()


if __name__ == "__main__":
    sys.exit(main())
