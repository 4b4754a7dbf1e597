"""A listing of index blobs against one of the same indexes as files, rebuilt.

Run from the repository root: `.venv/bin/python bench/listed_blobs.py [--specs 50000]`.
Writes one tag of the demo build-cache generator (`--specs` binaries, a v3 mirror of a root
and 10 stacks, each stack's index also as a v2 `index.json`) and two listings of its 11
indexes: by file (`stacks/<label>/build_cache/index.json`, the real listing before layout
v3) and by blob (`mirror/blobs/sha256/<xx>/<checksum>`, binaries.spack.io's since). Then,
for each, times `cachegql index LISTING --out DIR` (a process each, as
`bench/incremental.py` runs them):

- `full`: `--full`;
- `nothing changed`: the same listing again, its tag reused;
- `one stack gone`: the listing without its last stack, the tag read again, the other
  indexes taken as read before.

Each `--repeat` times (median). `--before VENV` times the blob listing with another
install too (e.g. the main checkout's). Work files are kept in bench/work/ by `--specs`.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from incremental import ROOT, WORK, in_child, measure, run  # type: ignore[import-not-found]

from cachegql.demo import MirrorConfig, write_mirror

KINDS = ("files", "blobs")


def sources(specs: int) -> Path:
    """The mirror and its two listings (each also without its last stack), written once."""
    folder = WORK / f"listed-blobs-{specs}"
    if (folder / "blobs.json").is_file():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    config = MirrorConfig(specs=specs, packages=max(50, specs * 2 // 125), seed=1, tag="develop")
    summary = write_mirror(config, folder)
    files = json.loads(summary.listing.read_text())["develop"]
    index = summary.mirror / "v3" / "manifests" / "index"
    blobs = []
    for entry in files:
        manifest = index / ("" if entry["label"] == "root" else entry["label"])
        data = json.loads((manifest / "index.manifest.json").read_text())["data"]
        [checksum] = [
            d["checksum"] for d in data if d["mediaType"].startswith("application/vnd.spack.db")
        ]
        blobs.append(
            {"label": entry["label"], "url": f"mirror/blobs/sha256/{checksum[:2]}/{checksum}"}
        )
    for kind, entries in (("files", files), ("blobs", blobs)):
        (folder / f"{kind}-less.json").write_text(json.dumps({"develop": entries[:-1]}))
        (folder / f"{kind}.json").write_text(json.dumps({"develop": entries}))
    return folder


def clean(out: Path) -> None:
    for suffix in (".builds", ".parts"):
        shutil.rmtree(out.with_name(out.name + suffix), ignore_errors=True)
    out.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=50_000, help="binaries in the tag")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--before", type=Path, metavar="VENV", help="another install to compare")
    args = parser.parse_args()
    if not (WORK / f"listed-blobs-{args.specs}" / "blobs.json").is_file():
        in_child(sources, args.specs)
    folder = sources(args.specs)
    sides = [(kind, ROOT / ".venv") for kind in KINDS]
    if args.before is not None:
        sides.append(("blobs", args.before))
    table: dict[str, list[str]] = {}
    for kind, venv in sides:
        column = f"{kind}" if venv == ROOT / ".venv" else f"{kind}, {venv}"
        runs: dict[str, list[tuple[float, int, str]]] = {}
        for _ in range(args.repeat):
            out = WORK / f"listed-blobs-{args.specs}-{kind}-index"
            clean(out)
            listing, fewer = folder / f"{kind}.json", folder / f"{kind}-less.json"
            runs.setdefault("full", []).append(run(venv, listing, out, "--full"))
            runs.setdefault("nothing changed", []).append(run(venv, listing, out))
            runs.setdefault("one stack gone", []).append(run(venv, fewer, out))
        for name, found in runs.items():
            _, seconds, rss, _ = measure(name, found)
            table.setdefault(name, []).append(f"{seconds:.2f} s, {rss} MB")
        table.setdefault("", []).append(column)
    print(f"\none tag, a root and 10 stacks, {args.specs} binaries, median of {args.repeat}\n")
    print("| build | " + " | ".join(table.pop("")) + " |")
    print("|---" * (len(sides) + 1) + "|")
    for name, cells in table.items():
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
