"""A build-cache build with its graph written by a forked copy, against the build alone.

    .venv/bin/python bench/forked_graph.py bench/work/mirror-200000-1600-seed1/mirror --rounds 5

Runs `cachegql index MIRROR --tag develop --full -q` of this checkout's install in turn:
as it is (a tag of up to `MAX_FORKED_NODES` nodes forks its graph writer,
index/disk/graph_writer.py) and alone (the same code, `MAX_FORKED_NODES` set to 0), the
order swapped every round, so that a slower minute of the machine falls on both. Prints
each build's wall time and the peaks of its closing line, then the medians.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = ROOT / ".venv" / "bin" / "python"
_RUN = "from cachegql.server.cli import main; sys.exit(main(sys.argv[1:]))"
WAYS = {
    "forked": f"import sys; {_RUN}",
    "alone": f"import sys; import cachegql.index.disk.graph_writer as g; "
    f"g.MAX_FORKED_NODES = 0; {_RUN}",
}


def build(code: str, mirror: Path, out: Path) -> tuple[float, str]:
    """One full build of `mirror` into `out`: its wall time, and its closing line's peaks."""
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    command = [str(PYTHON), "-c", code, "index", str(mirror), "--tag", "develop"]
    result = subprocess.run(
        [*command, "--out", str(out), "--full", "-q"],
        check=True,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    said = re.search(r"peak RSS .*?(?= -> )", result.stdout)
    return seconds, said.group(0).strip() if said else result.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirror", type=Path, help="a v3 mirror (cachegql demo-data --mirror)")
    parser.add_argument("--rounds", type=int, default=5, help="builds of each way (5)")
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory(prefix="forked-graph-") as scratch:
        for round_ in range(args.rounds):
            order = list(WAYS) if round_ % 2 == 0 else list(reversed(WAYS))
            for way in order:
                wall, peaks = build(WAYS[way], args.mirror, Path(scratch) / "ix")
                seconds[way].append(wall)
                print(f"round {round_ + 1} {way:6s} {wall:6.2f} s | {peaks}", flush=True)
    for way, walls in seconds.items():
        listed = ", ".join(f"{wall:.2f}" for wall in walls)
        print(f"{way}: median {statistics.median(walls):.2f} s ({listed})")
    sys.exit(0)


if __name__ == "__main__":
    main()
