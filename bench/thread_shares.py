"""How busy each thread of a command and of its child processes is, second by second.

    .venv/bin/python bench/thread_shares.py [--every 1.0] -- COMMAND ...

Runs COMMAND (for example `.venv/bin/cachegql index MIRROR --tag develop --out IX -q
--full`) and prints, every `--every` seconds, the CPU time each of its threads and its
children's threads took in that interval, as a share of one core, from `/proc` (Linux
only): `M` marks the command's own threads, `C` a child's, each with its thread id. A
profile says where time goes; this says which cores sat idle while it went (a build
that waits on its manifest reader, or finishes its graph on one core while the other
has nothing to do). Ends with the command's exit status.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK")

Thread = tuple[int, int]
"""A thread: its process and its own id."""


def children(pid: int) -> list[int]:
    """The processes `pid` started (not their own children), by their parent in `/proc`."""
    found = []
    for stat in PROC.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended since the listing
            continue
        if int(text[text.rindex(")") + 2 :].split()[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def cpu_ticks(pid: int) -> Iterator[tuple[Thread, int]]:
    """Each thread of `pid` and the clock ticks it ran for so far (user and system)."""
    for stat in (PROC / str(pid) / "task").glob("*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the thread ended since the listing
            continue
        fields = text[text.rindex(")") + 2 :].split()
        yield (pid, int(stat.parent.name)), int(fields[11]) + int(fields[12])


def watch(command: list[str], every: float) -> int:
    """Run `command`, printing its threads' shares every `every` seconds; its status."""
    process = subprocess.Popen(command)
    started, last = time.perf_counter(), dict[Thread, int]()
    while process.poll() is None:
        time.sleep(every)
        pids = [process.pid, *children(process.pid)]
        now = {thread: ticks for pid in pids for thread, ticks in cpu_ticks(pid)}
        shares = {
            thread: (ticks - last.get(thread, 0)) / TICKS / every
            for thread, ticks in sorted(now.items())
            if ticks > last.get(thread, 0)
        }
        last.update(now)
        threads = " ".join(
            f"{'M' if pid == process.pid else 'C'}{tid}:{share:.2f}"
            for (pid, tid), share in shares.items()
        )
        elapsed = time.perf_counter() - started
        print(f"{elapsed:7.1f} s  cores busy {sum(shares.values()):.2f}  {threads}", flush=True)
    return process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--every", type=float, default=1.0, help="seconds between two looks")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command: give it after --")
    if args.every <= 0:
        parser.error(f"--every must be more than 0 seconds, got {args.every}")
    try:
        status = watch(command, args.every)
    except OSError as exc:  # not found, not executable
        parser.error(f"cannot run {command[0]}: {exc.strerror}")
    sys.exit(status)


if __name__ == "__main__":
    main()
