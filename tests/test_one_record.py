"""One row's record, read without numpy's fancy indexing, is the batch read's record.

`Snapshot.specs([row])` (a hash lookup's one spec) takes its own path; every row of a
pages index and of a build-cache index is read both ways and compared, with the data
checked to hold what that path reads (tarball names, sizes, stacks, flags, variants).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cachegql.demo import DemoConfig, MirrorConfig, write_mirror, write_pages
from cachegql.index import IndexStore, Snapshot, build_index


@pytest.fixture(scope="module", params=["pages", "mirror"])
def snapshot(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Snapshot]:
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "pages":
        write_pages(DemoConfig(specs=4000), folder / "pages")
        build_index([folder / "pages"], folder / "ix")
    else:
        summary = write_mirror(MirrorConfig(specs=600, packages=40, stacks=3, seed=9), folder)
        build_index([summary.mirror], folder / "ix", tag="develop")
    store = IndexStore(folder / "ix")
    yield store.snapshot(store.default_tag)
    store.close()


def test_each_rows_own_record_is_the_batch_reads(snapshot: Snapshot) -> None:
    rows = list(range(len(snapshot.hash_rank)))
    batch = snapshot.specs(rows)
    reads = snapshot.spec_reads

    alone = [record for row in rows for record in snapshot.specs([row])]

    assert alone == batch
    assert snapshot.spec_reads == reads + len(rows)
    assert any(r.variants for r in alone) and any(r.stacks for r in alone)
    assert any(r.size is not None for r in alone) or any(r.tarball for r in alone)


def test_no_rows_no_records(snapshot: Snapshot) -> None:
    reads = snapshot.spec_reads
    assert snapshot.specs([]) == []
    assert snapshot.spec_reads == reads


def test_tarball_names_are_read_apart_as_the_records_hold_them(snapshot: Snapshot) -> None:
    rows = list(range(len(snapshot.hash_rank)))
    records = snapshot.specs(rows)
    names = [r.tarball for r in records]
    assert any(names) == ("pages" in str(snapshot.folder))  # v3 caches record none
    assert snapshot.tarballs.names(rows) == names  # rows far apart: a read each
    assert snapshot.tarballs.names(rows[5:25]) == names[5:25]  # adjacent: one read
    assert [snapshot.tarballs.name(row) for row in rows] == names
    assert snapshot.tarballs.names([]) == []
    # Without them, the records are the same but for the name.
    bare = snapshot.specs(rows, tarballs=False) + snapshot.specs([rows[-1]], tarballs=False)
    assert {r.tarball for r in bare} == {None}
    assert bare == [r._replace(tarball=None) for r in [*records, records[-1]]]
