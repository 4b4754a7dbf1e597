"""One row's record, read without numpy's fancy indexing, is the batch read's record.

`Snapshot.specs([row])` (a hash lookup's one spec) takes its own path; every row of a
pages index and of a build-cache index is read both ways and compared, with the data
checked to hold what that path reads (tarball names, sizes, stacks, flags, variants).
"""

from __future__ import annotations

from cachegql.index import Snapshot


def test_each_rows_own_record_is_the_batch_reads(demo_snapshot: Snapshot) -> None:
    rows = list(range(len(demo_snapshot.hash_rank)))
    batch = demo_snapshot.specs(rows)
    reads = demo_snapshot.spec_reads

    alone = [record for row in rows for record in demo_snapshot.specs([row])]

    assert alone == batch
    assert demo_snapshot.spec_reads == reads + len(rows)
    assert any(r.variants for r in alone) and any(r.stacks for r in alone)
    assert any(r.size is not None for r in alone) or any(r.tarball for r in alone)


def test_no_rows_no_records(demo_snapshot: Snapshot) -> None:
    reads = demo_snapshot.spec_reads
    assert demo_snapshot.specs([]) == []
    assert demo_snapshot.spec_reads == reads


def test_tarball_names_are_read_apart_as_the_records_hold_them(demo_snapshot: Snapshot) -> None:
    rows = list(range(len(demo_snapshot.hash_rank)))
    records = demo_snapshot.specs(rows)
    names = [r.tarball for r in records]
    assert any(names) == ("pages" in str(demo_snapshot.folder))  # v3 caches record none
    assert demo_snapshot.tarballs.names(rows) == names  # rows far apart: a read each
    assert demo_snapshot.tarballs.names(rows[5:25]) == names[5:25]  # adjacent: one read
    assert [demo_snapshot.tarballs.name(row) for row in rows] == names
    assert demo_snapshot.tarballs.names([]) == []
    # Without them, the records are the same but for the name.
    bare = demo_snapshot.specs(rows, tarballs=False) + demo_snapshot.specs(
        [rows[-1]], tarballs=False
    )
    assert {r.tarball for r in bare} == {None}
    assert bare == [r._replace(tarball=None) for r in [*records, records[-1]]]
