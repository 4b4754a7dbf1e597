"""Incremental re-index: a full build against rebuilds that reuse the unchanged tags.

Run from the repository root: `.venv/bin/python bench/incremental.py [--specs 50000]`.
Writes three tags of the demo build-cache generator (`--specs` binaries each, a v2
mirror per stack: root and 9 stacks, so 3 tags x 10 stacks) and a listing of all 30
indexes, then times `cachegql index LISTING --out DIR`, each run a process of its own
(wall time, and the peak RSS its closing line reports):

- `full`: `--full`, every tag read and written;
- `nothing changed`: the same sources again, every tag reused;
- `one stack changed`: one binary taken out of one stack of one tag, that tag read again.

With `--roots`, the listing names each stack's v2 mirror root instead of its index file;
with `--roots v3`, a layout v3 mirror per stack (its index as the blob its manifest
names, and the spec manifests of its binaries, linked from the tag's v3 mirror).
Each is run `--repeat` times (median). `--before VENV` also times a full build with
another install (e.g. the main checkout's, to compare peak memory before the build went
tag by tag). Work files are kept in bench/work/ by `--specs`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from cachegql.demo import MirrorConfig, write_mirror

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "bench" / "work"
TAGS = ("develop", "v0.22", "v0.23")
_CLOSING = re.compile(r"peak RSS (\d+) MB(?: \(and [^)]*\))?(?:, reused (\d+) of (\d+) tags?)?")


def sources(specs: int) -> Path:
    """The three tags and their listing, written once per `specs`."""
    folder = WORK / f"incremental-{specs}"
    if (folder / "listing.json").is_file():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    listing = {}
    started = time.perf_counter()
    for seed, tag in enumerate(TAGS, start=1):
        config = MirrorConfig(
            specs=specs, packages=max(50, specs // 50), stacks=9, seed=seed, tag=tag
        )
        summary = write_mirror(config, folder / tag)
        # The v3 mirror: the listing names the v2 indexes, and v3 stacks link its manifests.
        summary.mirror.rename(folder / tag / "v3-mirror")
        entries = json.loads(summary.listing.read_text())[tag]
        listing[tag] = [{"label": e["label"], "url": f"{tag}/{e['url']}"} for e in entries]
    (folder / "listing.json").write_text(json.dumps(listing, indent=1))
    print(f"wrote 3 tags of {specs} specs in {time.perf_counter() - started:.0f} s", flush=True)
    return folder


def in_child(function: Callable[..., object], *args: object) -> None:
    """Run `function(*args)` in a forked child: what it allocates (a tag's index parsed,
    a mirror written) must not raise this process's peak memory, which Linux hands on to
    every process started from it (`ru_maxrss`: an older build's closing line says it)."""
    child = multiprocessing.get_context("fork").Process(target=function, args=args)
    child.start()
    child.join()
    if child.exitcode != 0:
        raise SystemExit(f"{function.__name__} failed in its child process")


def roots_listing(listing: Path) -> Path:
    """The listing with each stack's mirror root in place of its `build_cache/index.json`."""
    entries = json.loads(listing.read_text())
    roots = {
        tag: [{**e, "url": e["url"].removesuffix("/build_cache/index.json")} for e in listed]
        for tag, listed in entries.items()
    }
    path = listing.with_name("listing-roots.json")
    path.write_text(json.dumps(roots, indent=1))
    return path


def v3_listing(listing: Path) -> Path:
    """The listing with a layout v3 mirror per stack in place of its v2 index, written once."""
    path = listing.with_name("listing-v3.json")
    if path.is_file():
        return path
    entries = json.loads(listing.read_text())
    roots = {}
    for tag, listed in entries.items():
        specs = listing.parent / tag / "v3-mirror" / "v3" / "manifests" / "spec"
        manifests = {
            p.name[-len(_MANIFEST_END) - 32 : -len(_MANIFEST_END)]: p
            for p in specs.rglob("*" + _MANIFEST_END)
        }
        roots[tag] = []
        for entry in listed:
            index = listing.parent / entry["url"]
            root = index.parent.parent / "v3"
            write_v3_index(root, index.read_bytes())
            installs = orjson.loads(index.read_bytes())["database"]["installs"]
            for digest, record in installs.items():
                if record["in_buildcache"]:
                    known = manifests[digest]
                    linked = root / "v3" / "manifests" / "spec" / known.parent.name / known.name
                    linked.parent.mkdir(parents=True, exist_ok=True)
                    os.link(known, linked)
            roots[tag].append({**entry, "url": root.relative_to(listing.parent).as_posix()})
    path.write_text(json.dumps(roots, indent=1))
    return path


_MANIFEST_END = ".spec.manifest.json"


def write_v3_index(root: Path, data: bytes) -> None:
    """`data` as the index blob of the v3 mirror at `root`, named by its manifest."""
    checksum = hashlib.sha256(data).hexdigest()
    blob = root / "blobs" / "sha256" / checksum[:2] / checksum
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    record = {"contentLength": len(data), "mediaType": "application/vnd.spack.db.v8+json"}
    record |= {"compression": "none", "checksumAlgorithm": "sha256", "checksum": checksum}
    manifest = root / "v3" / "manifests" / "index" / "index.manifest.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"version": 3, "data": [record]}))


def change_one_stack(folder: Path, round_: int) -> None:
    """Take one more binary out of the last stack of tag v0.22 (a new change each round)."""
    label = json.loads((folder / "listing.json").read_text())["v0.22"][-1]["label"]
    index = folder / "v0.22" / "stacks" / label / "build_cache" / "index.json"
    document = orjson.loads(index.read_bytes())
    installs = document["database"]["installs"]
    listed = [h for h, record in sorted(installs.items()) if record["in_buildcache"]]
    installs[listed[round_ % len(listed)]]["in_buildcache"] = False
    data = orjson.dumps(document)
    index.write_bytes(data)
    index.with_name("index.json.hash").write_text(hashlib.sha256(data).hexdigest())
    if index.parent.parent.joinpath("v3").is_dir():
        write_v3_index(index.parent.parent / "v3", data)


def run(venv: Path, listing: Path, out: Path, *flags: str) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (MB) and the closing line of one `cachegql index`."""
    command = [str(venv / "bin" / "cachegql"), "index", str(listing), "--out", str(out), "-q"]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, *flags], capture_output=True, text=True, check=True, timeout=900
    )
    seconds = time.perf_counter() - started
    line = done.stdout.strip().splitlines()[-1]
    match = _CLOSING.search(line)
    assert match is not None, line
    return seconds, int(match.group(1)), line


def measure(name: str, runs: list[tuple[float, int, str]]) -> tuple[str, float, int, str]:
    seconds = statistics.median(r[0] for r in runs)
    rss = max(r[1] for r in runs)
    return name, seconds, rss, runs[-1][2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=50_000, help="binaries per tag")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, metavar="VENV", help="another install to compare")
    parser.add_argument(
        "--roots",
        nargs="?",
        const="v2",
        choices=["v2", "v3"],
        help="list mirror roots of this layout (default v2), not index files",
    )
    args = parser.parse_args()
    if not (WORK / f"incremental-{args.specs}" / "listing.json").is_file():
        in_child(sources, args.specs)
    folder = sources(args.specs)
    listing = folder / "listing.json"
    if args.roots == "v2":
        listing = roots_listing(listing)
    elif args.roots == "v3":
        listing = v3_listing(listing)
    out = WORK / f"incremental-{args.specs}-index"
    shutil.rmtree(out.with_name(out.name + ".builds"), ignore_errors=True)
    shutil.rmtree(out.with_name(out.name + ".parts"), ignore_errors=True)
    out.unlink(missing_ok=True)
    venv = ROOT / ".venv"
    rows = []
    if args.before is not None:
        before = WORK / f"incremental-{args.specs}-before"
        shutil.rmtree(before.with_name(before.name + ".builds"), ignore_errors=True)
        before.unlink(missing_ok=True)
        runs = [run(args.before, listing, before, "--full") for _ in range(args.repeat)]
        rows.append(measure(f"full, {args.before}", runs))
    rows.append(measure("full", [run(venv, listing, out, "--full") for _ in range(args.repeat)]))
    rows.append(measure("nothing changed", [run(venv, listing, out) for _ in range(args.repeat)]))
    changed = []
    for round_ in range(args.repeat):
        in_child(change_one_stack, folder, round_)
        changed.append(run(venv, listing, out))
    rows.append(measure("one stack of one tag changed", changed))
    full = next(seconds for name, seconds, _, _ in rows if name == "full")
    named = f"{args.roots} mirror roots" if args.roots else "index files"
    print(
        f"\n3 tags x 10 stacks ({named}), {args.specs} binaries per tag, median of {args.repeat}\n"
    )
    print("| build | wall | of a full build | peak RSS |")
    print("|---|---|---|---|")
    for name, seconds, rss, _ in rows:
        print(f"| {name} | {seconds:.2f} s | {100 * seconds / full:.0f}% | {rss} MB |")
    print()
    for name, _, _, line in rows:
        print(f"{name}: {line}")


if __name__ == "__main__":
    main()
