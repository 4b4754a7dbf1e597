"""Turn ingested tables into an index folder: numpy columns per tag, whoosh text, a manifest."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from index.columns import Codes, Column, SetColumn, expand
from index.ingest import Ingested, TagTable
from index.model import parse_compiler
from index.textindex import ATOM, PACKAGE, TextDocument, write_text_index
from index.variants import parse_variant
from index.versions import sort_versions

FORMAT_VERSION = 2
MANIFEST = "manifest.json"
BUCKET_COLUMNS = {
    "compilers": "compiler",
    "oss": "os",
    "platforms": "platform",
    "targets": "target",
}


@dataclass(frozen=True)
class TagSummary:
    name: str
    folder: str
    packages: int
    specs: int


def write_index(ingested: Ingested, folder: Path, build_id: str, sources: list[str]) -> None:
    """Write a complete index for `ingested` into the empty `folder`."""
    summaries = []
    for number, tag in enumerate(sorted(ingested.tables)):
        tag_folder = folder / "tags" / str(number)
        tag_folder.mkdir(parents=True)
        packages, specs = write_tag(ingested.tables[tag], tag_folder)
        summaries.append(TagSummary(tag, f"tags/{number}", packages, specs))
    manifest = {
        "format": FORMAT_VERSION,
        "build_id": build_id,
        "sources": sources,
        "tags": [asdict(s) for s in summaries],
        "pages": ingested.pages,
        "specs": ingested.specs,
        "problems": [str(p) for p in ingested.problems],
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def write_tag(table: TagTable, folder: Path) -> tuple[int, int]:
    """Write one tag's columns and text index; return its numbers of packages and specs."""
    codes = {c: np.frombuffer(table.codes[c], dtype=np.int32) for c in table.COLUMNS}
    values = {c: table.dictionaries[c].values for c in table.COLUMNS}

    package_names, package = _sorted_codes([str(v) for v in values["package"]], codes["package"])
    hashes = np.array(table.hashes, dtype="S32")
    # Rows in the default order of results: package name, then hash.
    order = np.lexsort((hashes, package))
    package, hashes = package[order], hashes[order]
    codes = {c: codes_[order] for c, codes_ in codes.items()}
    num_rows = len(order)

    dictionaries: dict[str, Any] = {"package": package_names}
    Column.build("package", package_names, package).save(folder)

    hash_order = np.argsort(hashes, kind="stable").astype(np.int32)
    hash_rank = np.empty(num_rows, dtype=np.int32)
    hash_rank[hash_order] = np.arange(num_rows, dtype=np.int32)
    np.save(folder / "hash.sorted.npy", hashes[hash_order])
    np.save(folder / "hash.rows.npy", hash_order)
    np.save(folder / "hash.rank.npy", hash_rank)

    version_sets = [tuple(str(v) for v in vs) for vs in values["versions"]]
    version_names = sort_versions(sorted({v for vs in version_sets for v in vs}))
    version_id = {v: i for i, v in enumerate(version_names)}
    first_version = np.array([version_id[vs[0]] for vs in version_sets], dtype=np.int32)
    Column.build("version", version_names, first_version[codes["versions"]]).save(folder)
    _set_column("versions", version_names, version_sets, codes["versions"], sort=False).save(folder)
    dictionaries["version"] = dictionaries["versions"] = version_names

    compilers = [parse_compiler(str(raw)) for raw in values["compiler"]]
    bucket_codes: dict[str, Codes] = {}
    for name, texts in (
        ("compiler", [c.normalized for c in compilers]),
        ("compiler_name", [c.name for c in compilers]),
        ("compiler_raw", [c.raw for c in compilers]),
        ("os", [str(v) for v in values["os"]]),
        ("platform", [str(v) for v in values["platform"]]),
        ("target", [str(v) for v in values["target"]]),
    ):
        source = "compiler" if name.startswith("compiler") else name
        names, column_codes = _sorted_codes(texts, codes[source])
        Column.build(name, names, column_codes).save(folder)
        dictionaries[name] = names
        bucket_codes[name] = column_codes

    stack_sets = [tuple(str(s) for s in ss) for ss in values["stacks"]]
    stack_names = sorted({s for ss in stack_sets for s in ss})
    stacks = _set_column("stacks", stack_names, stack_sets, codes["stacks"], sort=True)
    stacks.save(folder)
    dictionaries["stacks"] = stack_names

    variant_sets = [tuple(str(v) for v in vs) for vs in values["variants"]]
    variant_names = sorted({v for vs in variant_sets for v in vs})
    _set_column("variants", variant_names, variant_sets, codes["variants"], sort=False).save(folder)
    atoms_of = {raw: parse_variant(raw).atoms for raw in variant_names}
    atom_sets = [tuple(sorted({a for raw in vs for a in atoms_of[raw]})) for vs in variant_sets]
    atom_names = sorted({a for atoms in atom_sets for a in atoms})
    atoms = _set_column("atoms", atom_names, atom_sets, codes["variants"], sort=True)
    atoms.save(folder)
    dictionaries["variants"] = variant_names
    dictionaries["atoms"] = atom_names

    sizes = np.frombuffer(table.sizes, dtype=np.int64)[order]
    np.save(folder / "size.npy", sizes)
    _save_strings(folder, "tarball", (table.tarballs[i] for i in order.tolist()))

    package_start = np.searchsorted(package, np.arange(len(package_names) + 1)).astype(np.int64)
    np.save(folder / "package.start.npy", package_start)
    _package_sets("package_stacks", package, stacks, len(package_names)).save(folder)
    _package_sets("package_atoms", package, atoms, len(package_names)).save(folder)

    dictionaries["stack_summaries"] = _stack_summaries(stacks, package, bucket_codes, dictionaries)
    (folder / "dictionaries.json").write_text(json.dumps(dictionaries), encoding="utf-8")

    documents = [TextDocument(PACKAGE, i, n) for i, n in enumerate(package_names)]
    documents.extend(TextDocument(ATOM, i, _atom_words(atom)) for i, atom in enumerate(atom_names))
    write_text_index(folder / "text", (d for d in documents if d.text))
    return len(package_names), num_rows


def _sorted_codes(texts: list[str], codes: Codes) -> tuple[list[str], Codes]:
    """Re-code `codes` (indexes into `texts`) against the sorted distinct texts."""
    names = sorted(set(texts))
    position = {name: i for i, name in enumerate(names)}
    remap = np.array([position[t] for t in texts], dtype=np.int32)
    return names, remap[codes] if len(codes) else codes


def _set_column(
    name: str, names: list[str], sets: list[tuple[str, ...]], codes: Codes, *, sort: bool
) -> SetColumn:
    position = {n: i for i, n in enumerate(names)}
    members = [[position[v] for v in s] for s in sets]
    if sort:
        members = [sorted(m) for m in members]
    lengths = np.array([len(m) for m in members], dtype=np.int64)
    offsets = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    items = np.array([v for m in members for v in m], dtype=np.int32)
    return SetColumn.build(name, names, codes, offsets, items)


def _save_strings(folder: Path, name: str, strings: Iterator[str | None]) -> None:
    """Strings as one UTF-8 blob with offsets; `None` is stored as empty."""
    offsets = [0]
    with (folder / f"{name}.blob").open("wb") as blob:
        for text in strings:
            data = text.encode() if text else b""
            blob.write(data)
            offsets.append(offsets[-1] + len(data))
    np.save(folder / f"{name}.offsets.npy", np.array(offsets, dtype=np.int64))


def _package_sets(name: str, package: Codes, column: SetColumn, num_packages: int) -> SetColumn:
    """For each package, the union of its specs' sets (its stacks, its variant atoms)."""
    rows, value_ids = expand(column.codes, column.members)
    width = max(1, len(column.values))
    pairs = np.unique(package[rows].astype(np.int64) * width + value_ids)
    owners, members = pairs // width, (pairs % width).astype(np.int32)
    offsets = np.searchsorted(owners, np.arange(num_packages + 1)).astype(np.int64)
    packages = np.arange(num_packages, dtype=np.int32)
    return SetColumn.build(name, column.values, packages, offsets, members)


def _stack_summaries(
    stacks: SetColumn,
    package: Codes,
    column_codes: dict[str, Codes],
    dictionaries: dict[str, Any],
) -> list[dict[str, Any]]:
    """Per stack: spec and package counts, and spec counts per compiler, os, platform, target."""
    summaries = []
    for stack_id, stack in enumerate(stacks.values):
        rows = stacks.postings(stack_id)
        summary: dict[str, Any] = {
            "name": stack,
            "specs": len(rows),
            "packages": len(np.unique(package[rows])),
        }
        for key, column in BUCKET_COLUMNS.items():
            summary[key] = buckets(column_codes[column][rows], dictionaries[column])
        summaries.append(summary)
    return summaries


def buckets(codes: npt.NDArray[np.int32], names: list[str]) -> list[tuple[str, int]]:
    """(value, count) pairs, count descending then value ascending."""
    counts = np.bincount(codes, minlength=len(names))
    present = np.flatnonzero(counts)
    return sorted(((names[i], int(counts[i])) for i in present), key=lambda b: (-b[1], b[0]))


def _atom_words(atom: str) -> str:
    name, _, value = atom.partition("=")
    if value == "false":
        return ""
    return name if value == "true" else f"{name} {value}"
