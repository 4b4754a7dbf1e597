"""A build from a cold disk against one from memory, in turn, for one or more installs.

    .venv/bin/python bench/cold_build.py MIRROR [--tag develop] [--venv V ...] [--rounds 2]
        [--warm-only]

Each round builds `MIRROR` (a v3 mirror, `cachegql index MIRROR --tag TAG --full`) with
each install (`--venv`, this checkout's by default): first cold, the page cache dropped
(as root: `sync` then `/proc/sys/vm/drop_caches`, the inodes and folders too; otherwise
each of the mirror's files advised out with `posix_fadvise(DONTNEED)`, their inodes kept),
then at once again, warm. It prints each build's wall time, what its processes read from
the disk (`ru_inblock`) and its peak RSS as its closing line says; the median per install
and state comes last. This machine pages out memory that no one touched for a minute (a
DAMON `pageout` scheme): a 1M-spec mirror read ten minutes before, as `make bench` builds
it, is mostly cold again; dropping the page cache makes the cold case the same each time.
The installs take turns, their order swapped every round. `--warm-only` compares them
from memory alone: one build with each a round (the first of all reads what is not in
memory yet).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
from pathlib import Path

from run import measured_build

ROOT = Path(__file__).resolve().parent.parent
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_cached(mirror: Path) -> str:
    """Drop what the page cache holds of `mirror`; says how."""
    subprocess.run(["sync"], check=True)
    if os.geteuid() == 0:
        try:
            DROP_CACHES.write_text("3\n")
            return "page cache, folders and inodes dropped"
        except OSError:  # a container without the right: advise each file out instead
            pass
    for folder, _, files in os.walk(mirror):
        for name in files:
            try:
                fd = os.open(f"{folder}/{name}", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
            finally:
                os.close(fd)
    return "the mirror's file pages advised out (not root: folders and inodes kept)"


def one_build(venv: Path, mirror: Path, tag: str, out: Path) -> dict[str, float]:
    """One full build into `out` (`run.measured_build`): wall seconds, MB read from the
    disk (by the build and its helpers), the peak RSS in MB of the build and of its
    manifest reader."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_inblock
    build = measured_build(venv / "bin", [str(mirror.resolve()), "--tag", tag], out)
    read = resource.getrusage(resource.RUSAGE_CHILDREN).ru_inblock - before
    reader = build["helper_peak_mb"]
    return {
        "seconds": build["seconds"],
        "disk_mb": round(read * 512 / 1e6),
        "peak_rss_mb": build["peak_rss_mb"],
        "reader_rss_mb": float("nan") if reader is None else reader,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirror", type=Path, help="a v3 mirror (its folder with v3/)")
    parser.add_argument("--tag", default="develop")
    parser.add_argument(
        "--venv", type=Path, action="append", help="an install to build with (repeatable)"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--warm-only", action="store_true", help="no cold builds: one build an install a round"
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    venvs = args.venv or [ROOT / ".venv"]
    states = ("warm",) if args.warm_only else ("cold", "warm")
    rows: dict[tuple[str, str], list[float]] = {}
    print("| round | install | state | wall | read from disk | peak RSS, build / manifest reader |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="cold-build-") as scratch:
        for round_ in range(1, args.rounds + 1):
            for venv in venvs if round_ % 2 else venvs[::-1]:  # the order swapped each round
                out = Path(scratch) / "index"
                for state in states:
                    if state == "cold":
                        how = drop_cached(args.mirror)
                    elif args.warm_only:
                        how = "from memory"
                    else:
                        how = "as the cold build left it"
                    build = one_build(venv, args.mirror, args.tag, out)
                    rows.setdefault((str(venv), state), []).append(build["seconds"])
                    print(
                        f"| {round_} | {venv} | {state} ({how}) | {build['seconds']} s "
                        f"| {build['disk_mb']} MB | {build['peak_rss_mb']} MB / "
                        f"{build['reader_rss_mb']} MB |",
                        flush=True,
                    )
    for (venv, state), seconds in rows.items():
        print(f"median {state:4} {venv}: {statistics.median(seconds):.1f} s ({seconds})")


if __name__ == "__main__":
    main()
