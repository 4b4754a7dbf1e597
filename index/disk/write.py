"""Write ingested tables as an index build: numpy columns per tag, whoosh text, a manifest.

The manifest is written last and lists every other file with its size and checksum, so
that a reader can tell a complete, intact build from a damaged one before serving it.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from cachegql.index.disk.columns import Codes, Column, Offsets, Postings, Rows, SetColumn, expand
from cachegql.index.disk.dagwrite import write_dag
from cachegql.index.disk.layout import (
    CHECKSUM,
    DICTIONARIES,
    FORMAT_VERSION,
    MANIFEST,
    NODES_FOLDER,
    TEXT_FOLDER,
    file_checksum,
)
from cachegql.index.disk.text_write import EarlierText, text_documents, write_text
from cachegql.index.disk.verify import FileEntry
from cachegql.index.fields import BUCKET_FIELDS, FIELDS_BY_NAME, SPEC_FIELDS
from cachegql.index.ingest import TagGraph, TagTable
from cachegql.index.spack.compilers import Compiler
from cachegql.index.spack.variants import Variant
from cachegql.index.spack.versions import sort_versions

__all__ = [
    "TagRows",
    "TagWritten",
    "file_table",
    "tag_rows",
    "write_manifest",
    "write_tag",
    "write_tag_folder",
]


class TagWritten(NamedTuple):
    """What `write_tag_folder` wrote: the tag's numbers of packages and specs, and the
    digest of its text index's documents (text_write.py)."""

    packages: int
    specs: int
    text: str | None


def write_tag_folder(
    table: TagTable, graph: TagGraph | None, folder: Path, earlier_text: EarlierText | None = None
) -> TagWritten:
    """Write one tag into the new `folder`: its columns and text index (taken from
    `earlier_text` where it has one of the same documents), and with a DAG (`graph`,
    finished) the nodes that are not its binaries and the edges."""
    folder.mkdir(parents=True)
    rows = tag_rows(table)
    if graph is None or graph.extras is None:
        packages, text = write_tag(table, folder, rows, earlier_text=earlier_text)
        return TagWritten(packages, len(rows.hashes), text)
    node_rows = tag_rows(graph.extras)
    (folder / NODES_FOLDER).mkdir()
    # The DAG is numpy's work, mostly outside the GIL: it is written in a thread while
    # the columns and the text are (3.9 s beside 5.4 s of a 1M build).
    with ThreadPoolExecutor(1, thread_name_prefix="write-dag") as pool:
        names = rows.names + node_rows.names
        dag = pool.submit(write_dag, folder, graph.edges, rows.hashes, node_rows.hashes, names)
        packages, text = write_tag(table, folder, rows, earlier_text=earlier_text)
        write_tag(graph.extras, folder / NODES_FOLDER, node_rows, text=False)
        dag.result()
    return TagWritten(packages, len(rows.hashes), text)


def write_manifest(
    folder: Path,
    known: Mapping[str, FileEntry],
    *,
    build_id: str,
    sources: list[str],
    tags: list[dict[str, Any]],
    pages: int,
    caches: int,
    specs: int,
    problems: list[str],
    mirrors: dict[str, Any],
) -> None:
    """Write the manifest of the build in `folder`, last: every other file with its size
    and checksum, those of `known` files (reused, already checked) as they are given."""
    manifest = {
        "format": FORMAT_VERSION,
        "build_id": build_id,
        "sources": sources,
        "tags": tags,
        "pages": pages,
        "caches": caches,
        "specs": specs,
        "problems": problems,
        "mirrors": mirrors,  # optional: an index without it has no binary URLs
        "checksum": CHECKSUM,
        "files": file_table(folder, known),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def file_table(
    folder: Path, known: Mapping[str, FileEntry] | None = None
) -> dict[str, dict[str, Any]]:
    """Every file under `folder` (by its path relative to it, with `/`): size and checksum,
    read from the file unless `known` gives them."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p != folder / MANIFEST)
    table = {}
    for path in files:
        name = path.relative_to(folder).as_posix()
        entry = (known or {}).get(name)
        if entry is None:
            entry = FileEntry(path.stat().st_size, file_checksum(path))
        table[name] = {"size": entry.size, CHECKSUM: entry.checksum}
    return table


@dataclass(frozen=True, eq=False)
class TagRows:
    """A tag's rows in the order they are written: by package name, then hash."""

    order: npt.NDArray[np.intp]
    """The table's row of each written row."""
    hash_texts: npt.NDArray[np.bytes_]
    """The hash of each written row, as 32 bytes."""
    hashes: list[str]
    names: list[str]
    """The package name of each written row."""


def tag_rows(table: TagTable) -> TagRows:
    """The order `write_tag` writes `table`'s rows in (the default order of results)."""
    table.settle()  # every row's own codes: the columns are read whole from here on
    package = FIELDS_BY_NAME["package"]
    column = table.fields[package.name]
    names, codes = _sorted_codes(column.values, _codes(column.codes), package.order)
    hashes = np.array(table.hashes, dtype="S32")
    order = np.lexsort((hashes, codes))
    hashes = hashes[order]
    return TagRows(
        order,
        hashes,
        [h.decode() for h in hashes.tolist()],
        [names[code] for code in codes[order].tolist()],
    )


def write_tag(
    table: TagTable,
    folder: Path,
    rows: TagRows,
    *,
    text: bool = True,
    earlier_text: EarlierText | None = None,
) -> tuple[int, str | None]:
    """Write one tag's columns in the order of `rows`, and its text index unless `text`
    is false (taken from `earlier_text` where it has one: `write_text`); return its
    number of packages, and its text documents' digest (None without text)."""
    dictionaries: dict[str, Any] = {}
    field_codes: dict[str, Codes] = {}
    for field in SPEC_FIELDS:
        column = table.fields[field.name]
        names, codes = _sorted_codes(column.values, _codes(column.codes), field.order)
        dictionaries[field.name], field_codes[field.name] = names, codes

    order, hashes = rows.order, rows.hash_texts
    field_codes = {name: codes[order] for name, codes in field_codes.items()}
    parts = {name: _codes(column.codes)[order] for name, column in table.parts.items()}
    for field in SPEC_FIELDS:
        save_column(
            folder, build_column(field.name, dictionaries[field.name], field_codes[field.name])
        )
    num_rows = len(order)
    package = field_codes["package"]
    num_packages = len(dictionaries["package"])

    hash_order = np.argsort(hashes, kind="stable").astype(np.int32)
    hash_rank = np.empty(num_rows, dtype=np.int32)
    hash_rank[hash_order] = np.arange(num_rows, dtype=np.int32)
    np.save(folder / "hash.sorted.npy", hashes[hash_order])
    np.save(folder / "hash.rows.npy", hash_order)
    np.save(folder / "hash.rank.npy", hash_rank)

    version_sets: list[tuple[str, ...]] = table.parts["versions"].values
    version_names = sort_versions(sorted({v for vs in version_sets for v in vs}))
    save_set_column(folder, _set_column("versions", version_names, version_sets, parts["versions"]))
    dictionaries["versions"] = version_names

    compilers: list[Compiler] = table.parts["compiler"].values
    np.save(folder / "compiler_record.codes.npy", parts["compiler"])
    dictionaries["compiler_record"] = [[c.name, c.version, c.raw] for c in compilers]

    flag_sets: list[tuple[tuple[str, tuple[str, ...]], ...]] = table.parts["flags"].values
    np.save(folder / "flags_record.codes.npy", parts["flags"])
    dictionaries["flags_record"] = [[[kind, list(values)] for kind, values in f] for f in flag_sets]
    # `cflags=-O2` once per flag: what a flag constraint in a query is matched against.
    flag_atom_sets = [tuple(sorted({f"{k}={v}" for k, vs in f for v in vs})) for f in flag_sets]
    flag_atom_names = sorted({a for atoms in flag_atom_sets for a in atoms})
    save_set_column(
        folder,
        _set_column("flag_atoms", flag_atom_names, flag_atom_sets, parts["flags"], sort=True),
    )
    dictionaries["flag_atoms"] = flag_atom_names

    stack_sets: list[tuple[str, ...]] = table.parts["stacks"].values
    stack_names = sorted({s for ss in stack_sets for s in ss})
    stacks = _set_column("stacks", stack_names, stack_sets, parts["stacks"], sort=True)
    save_set_column(folder, stacks)
    dictionaries["stacks"] = stack_names

    variant_sets: list[tuple[Variant, ...]] = table.parts["variants"].values
    variants = sorted({v for vs in variant_sets for v in vs}, key=lambda v: v.raw)
    variant_raws = [tuple(v.raw for v in vs) for vs in variant_sets]
    variant_names = [v.raw for v in variants]
    save_set_column(folder, _set_column("variants", variant_names, variant_raws, parts["variants"]))
    dictionaries["variants"] = [[v.name, v.value, v.raw] for v in variants]
    atom_sets = [tuple(sorted({a for v in vs for a in v.atoms})) for vs in variant_sets]
    atom_names = sorted({a for atoms in atom_sets for a in atoms})
    atoms = _set_column("atoms", atom_names, atom_sets, parts["variants"], sort=True)
    save_set_column(folder, atoms)
    dictionaries["atoms"] = atom_names

    sizes = np.frombuffer(table.sizes, dtype=np.int64)[order]
    np.save(folder / "size.npy", sizes)
    _save_strings(folder, "tarball", (table.tarballs[i] for i in order.tolist()))

    package_start = np.searchsorted(package, np.arange(num_packages + 1)).astype(np.int64)
    np.save(folder / "package.start.npy", package_start)
    save_set_column(folder, _package_sets("package_stacks", package, stacks, num_packages))
    save_set_column(folder, _package_sets("package_atoms", package, atoms, num_packages))

    dictionaries["stack_summaries"] = _stack_summaries(stacks, field_codes, dictionaries)
    (folder / DICTIONARIES).write_text(json.dumps(dictionaries), encoding="utf-8")

    text_digest = None
    if text:
        documents = text_documents(dictionaries["package"], atom_names)
        text_digest = write_text(folder / TEXT_FOLDER, documents, earlier_text)
    return num_packages, text_digest


def _codes(codes: array[int]) -> Codes:
    return np.frombuffer(codes, dtype=np.int32)


def _sorted_codes(texts: list[str], codes: Codes, order: str = "text") -> tuple[list[str], Codes]:
    """Re-code `codes` (indexes into `texts`) against the sorted distinct texts."""
    names = sort_versions(sorted(set(texts))) if order == "version" else sorted(set(texts))
    position = {name: i for i, name in enumerate(names)}
    remap = np.array([position[t] for t in texts], dtype=np.int32)
    return names, remap[codes] if len(codes) else codes


# Building and saving columns


def group(values: Codes, num_values: int, items: Rows | None = None) -> Postings:
    """Group `items` (default: 0..n-1, kept ascending within a value) by `values`."""
    order = np.argsort(values, kind="stable")
    grouped = order.astype(np.int32) if items is None else items[order]
    counts = np.bincount(values, minlength=num_values)
    offsets = np.zeros(num_values + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return Postings(np.ascontiguousarray(grouped, dtype=np.int32), offsets)


def build_column(name: str, values: list[str], codes: Codes) -> Column:
    return Column(name, values, codes, group(codes, len(values)))


def build_set_column(
    name: str, values: list[str], codes: Codes, set_offsets: Offsets, set_items: Codes
) -> SetColumn:
    """`set_offsets`/`set_items` list each set's member value ids (CSR)."""
    members = Postings(set_items, set_offsets)
    set_of_item = np.repeat(np.arange(len(set_offsets) - 1, dtype=np.int32), np.diff(set_offsets))
    set_postings = group(set_items, len(values), items=set_of_item)
    rows_of_item, values_of_item = expand(codes, members)
    postings = group(values_of_item, len(values), items=rows_of_item)
    return SetColumn(name, values, codes, members, postings, set_postings)


def _save_postings(folder: Path, name: str, postings: Postings) -> None:
    np.save(folder / f"{name}.items.npy", postings.items)
    np.save(folder / f"{name}.offsets.npy", postings.offsets)


def save_column(folder: Path, column: Column) -> None:
    np.save(folder / f"{column.name}.codes.npy", column.codes)
    _save_postings(folder, column.name, column.postings)


def save_set_column(folder: Path, column: SetColumn) -> None:
    np.save(folder / f"{column.name}.codes.npy", column.codes)
    _save_postings(folder, f"{column.name}.members", column.members)
    _save_postings(folder, f"{column.name}.postings", column.postings)
    _save_postings(folder, f"{column.name}.set_postings", column.set_postings)


def _set_column(
    name: str,
    names: list[str],
    sets: Sequence[tuple[str, ...]],
    codes: Codes,
    *,
    sort: bool = False,
) -> SetColumn:
    position = {n: i for i, n in enumerate(names)}
    members = [[position[v] for v in s] for s in sets]
    if sort:
        members = [sorted(m) for m in members]
    lengths = np.array([len(m) for m in members], dtype=np.int64)
    offsets = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    items = np.array([v for m in members for v in m], dtype=np.int32)
    return build_set_column(name, names, codes, offsets, items)


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
    return build_set_column(name, column.values, packages, offsets, members)


def _stack_summaries(
    stacks: SetColumn, field_codes: dict[str, Codes], dictionaries: dict[str, Any]
) -> list[dict[str, Any]]:
    """Per stack: spec and package counts, and spec counts per value of each bucket field."""
    summaries = []
    for stack_id, stack in enumerate(stacks.values):
        rows = stacks.postings(stack_id)
        summary: dict[str, Any] = {
            "name": stack,
            "specs": len(rows),
            "packages": len(np.unique(field_codes["package"][rows])),
        }
        for field in BUCKET_FIELDS:
            summary[str(field.facet)] = _buckets(
                field_codes[field.name][rows], dictionaries[field.name]
            )
        summaries.append(summary)
    return summaries


def _buckets(codes: npt.NDArray[np.int32], names: list[str]) -> list[tuple[str, int]]:
    """(value, count) pairs, count descending then value ascending."""
    counts = np.bincount(codes, minlength=len(names))
    present = np.flatnonzero(counts)
    pairs = ((names[i], int(counts[i])) for i in present if names[i])  # "": not recorded
    return sorted(pairs, key=lambda b: (-b[1], b[0]))
