"""One row's record, read without numpy's fancy indexing, is the batch read's record.

`Snapshot.specs([row])` (a hash lookup's one spec) takes its own path; every row of a
pages index and of a build-cache index is read both ways and compared, with the data
checked to hold what that path reads (tarball names, sizes, stacks, flags, variants).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from cachegql.index import IndexStore, Snapshot, SpecRecord
from cachegql.schema import Context, build_schema
from cachegql.schema.spec_fields import FIELDS, SHOWN_ONE
from cachegql.schema.spec_types import SpecBatch


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


def test_a_batchs_columns_are_its_records_fields(demo_snapshot: Snapshot) -> None:
    """`spec_columns` reads a field at a time, for rows in any order, repeated or alone."""
    count = len(demo_snapshot.hash_rank)
    for rows in ([count - 1, 0, 3, 3, 1], [2], list(range(count))):
        records = demo_snapshot.specs(rows)
        columns = demo_snapshot.spec_columns(rows)
        for field in reversed(SpecRecord._fields):  # an order unlike the records'
            assert columns[field] == [getattr(r, field) for r in records], (rows, field)
        assert [columns.record(at) for at in range(len(rows))] == records
    assert demo_snapshot.spec_columns([])["hash"] == []


def test_a_spec_alone_shows_what_a_page_shows(demo_snapshot: Snapshot) -> None:
    """A spec looked up by its hash shows each field's value read off its row alone
    (`SHOWN_ONE`), a page a column at a time (`SHOWN`): the same values."""
    rows = list(range(len(demo_snapshot.hash_rank)))
    page = SpecBatch(demo_snapshot, rows)
    for at, row in enumerate(rows):
        alone = SpecBatch(demo_snapshot, [row])
        assert alone.row == row
        for name in FIELDS:
            assert SHOWN_ONE[name](demo_snapshot, row) == page.shown(name)[at], (row, name)
        assert alone.columns.one("hash") == demo_snapshot.hash_of(row)


QUERIES_AND_TARBALL_READS = {
    "{ specs(first: 20) { nodes { hash format name } } }": 0,
    "{ specs(first: 20) { nodes { package { name } specFileUrl tarballUrl } } }": 0,
    "{ specs(first: 20) { nodes { hash tarball } } }": 1,  # the whole page at once
}


@pytest.mark.parametrize("compiled", [True, False])
def test_a_page_reads_tarball_names_only_to_show_them(
    pages_index: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    """Tarball names are the one field in a file of its own: the fields made of a whole
    record (`format`, `package`, the URLs) must not read it."""
    store = IndexStore(pages_index)
    tarballs = store.snapshot().tarballs
    reads: list[int] = []
    names = tarballs.names

    def counted(rows: list[int]) -> list[str | None]:
        reads.append(len(rows))
        return names(rows)

    monkeypatch.setattr(tarballs, "names", counted)
    schema = build_schema(compiled=compiled)
    try:
        for query, expected in QUERIES_AND_TARBALL_READS.items():
            reads.clear()
            answer = schema.answer_sync(query, None, Context(store))
            if answer.body is not None:
                data = orjson.loads(answer.body)["data"]
            else:
                assert answer.result is not None and answer.result.errors is None
                data = answer.result.data
            assert len(data["specs"]["nodes"]) == 20
            assert len(reads) == expected, query
    finally:
        store.close()
    assert reads == [20]
