"""tagDiff at scale: the time and memory of a diff between two large tags.

Run from the repository root: `.venv/bin/python bench/tagdiff.py [--specs 200000]`.
Writes demo pages (`cachegql demo-data`), derives a tag `next` from `develop` sharing
most of its specs (tests/page_factory.py's `derive_tag`), builds the index, then times
`cachegql.index.tag_diff` (unfiltered and filtered) and the `tagDiff` field through the
schema, and measures the diff's peak of traced memory (numpy's arrays included). Work
files are kept in bench/work/ and reused by later runs with the same `--specs`.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from cachegql.index import IndexStore, SpecCriteria, StringMatch, build_index, tag_diff
from cachegql.schema import Context, build_schema

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' page factory
from tests.page_factory import derive_tag  # noqa: E402

WORK = ROOT / "bench" / "work"
QUERY = """{ tagDiff(from: "develop", to: "next", first: 20) { totalCount added removed
  unchanged nodes { name added removed unchanged addedSpecs(first: 20) { nodes { hash } } } } }"""


def timed(work: Callable[[], object], runs: int) -> float:
    """The median wall time of `runs` calls, in milliseconds."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def peak_memory(work: Callable[[], object]) -> float:
    """The peak of memory traced while `work` runs, in MB."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=200_000, help="demo specs (all tags)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    folder = WORK / f"tagdiff-{args.specs}"
    pages, index = folder / "pages", folder / "ix"
    if not (pages / "_cache" / "next").is_dir():
        cli = str(Path(sys.executable).with_name("cachegql"))
        subprocess.run(
            [cli, "demo-data", "--specs", str(args.specs), "--out", str(pages)], check=True
        )
        derive_tag(pages, "develop", "next")
    if not index.is_dir():
        build_index([pages], index)
    store = IndexStore(index)
    old, new = store.snapshot("develop"), store.snapshot("next")
    filtered = SpecCriteria(fields=(("os", StringMatch(eq="ubuntu22.04")),))
    diff = tag_diff(old, new)
    schema = build_schema()
    result = schema.execute_sync(QUERY, context_value=Context(store))
    assert result.errors is None, result.errors

    def query() -> object:
        return schema.execute_sync(QUERY, context_value=Context(store))

    rows = {
        "specs (develop, next)": f"{old.num_specs:,}, {new.num_specs:,}",
        "added, removed, unchanged": f"{diff.num_added:,}, {diff.num_removed:,}, "
        f"{diff.num_unchanged:,} in {len(diff.names)} packages",
        "tag_diff, ms": f"{timed(lambda: tag_diff(old, new), args.runs):.1f}",
        "tag_diff, os filter, ms": f"{timed(lambda: tag_diff(old, new, filtered), args.runs):.1f}",
        "tagDiff query (20 packages), ms": f"{timed(query, args.runs):.1f}",
        "tag_diff peak memory, MB": f"{peak_memory(lambda: tag_diff(old, new)):.1f}",
    }
    store.close()
    width = max(map(len, rows))
    for name, value in rows.items():
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
