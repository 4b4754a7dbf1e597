"""The server's holder of the index, in process: what it does with a build it cannot use,
and with files of the build it serves that change under it."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import orjson
import pytest

from cachegql.index import IndexStore, build_index, deadline
from cachegql.index.budget import remaining
from cachegql.index.disk import snapshot as snapshot_module
from cachegql.index.query import bounds
from cachegql.schema import Context, build_schema
from cachegql.server.holder import IndexHolder
from tests.conftest import PAGES

LOGGER = "cachegql.server"


def _point(out: Path, target: Path) -> None:
    swap = out.with_name(".swap")
    swap.symlink_to(target)
    swap.replace(out)  # one rename, as a publish does


def _damaged_copy(out: Path) -> Path:
    """A copy of the served build with one column cut short: its checksums fail."""
    damaged = out.resolve().with_name("damaged-build")
    shutil.copytree(out.resolve(), damaged)
    column = next(damaged.rglob("*.codes.npy"))
    os.truncate(column, column.stat().st_size // 2)
    return damaged


def _messages(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


@pytest.fixture
def holder(tmp_path: Path) -> IndexHolder:
    out = tmp_path / "ix"
    build_index([PAGES], out)
    return IndexHolder(out)


def test_a_refused_build_is_tried_again_only_once_it_changes(
    holder: IndexHolder, caplog: pytest.LogCaptureFixture
) -> None:
    served = holder.store
    damaged = _damaged_copy(holder.path)
    _point(holder.path, damaged)
    with caplog.at_level(logging.ERROR, LOGGER):
        assert holder.reload_if_changed() is False
        assert holder.reload_if_changed() is False
        refused = _messages(caplog, "refused index build")
        assert len(refused) == 1, refused  # not verified again, as it is
        assert "the manifest says" in refused[0] and "(truncated)" in refused[0]
        manifest = damaged / "manifest.json"
        os.utime(manifest)  # what a rewrite of the build does to its manifest...
        manifest.write_text(manifest.read_text())  # ...changes its ctime: tried again
        assert holder.reload_if_changed() is False
        assert len(_messages(caplog, "refused index build")) == 2
    assert holder.store is served
    served.close()


def test_an_index_link_to_nothing_keeps_the_build_served(
    holder: IndexHolder, caplog: pytest.LogCaptureFixture
) -> None:
    served = holder.store
    _point(holder.path, holder.path.with_name("nowhere"))
    with caplog.at_level(logging.ERROR, LOGGER):
        assert holder.reload_if_changed() is False
    (line,) = _messages(caplog, "is unreadable")
    assert served.build_id in line and holder.store is served
    served.close()


def test_files_of_the_served_build_changed_on_disk_are_logged_once(
    holder: IndexHolder, caplog: pytest.LogCaptureFixture
) -> None:
    build = holder.path.resolve()
    cut = next(build.rglob("*.codes.npy"))
    os.truncate(cut, 0)
    replaced = next(p for p in build.rglob("*.offsets.npy"))
    copy = replaced.with_name("copy")
    shutil.copy(replaced, copy)
    copy.replace(replaced)  # a new file under the old name: not the one verified
    with caplog.at_level(logging.ERROR, LOGGER):
        assert holder.reload_if_changed() is False
        assert holder.reload_if_changed() is False
    changed = _messages(caplog, "since it was verified")
    assert len(changed) == 2, changed  # once each, however often the holder looks
    (in_memory,) = [m for m in changed if cut.name in m]
    assert "they come from its copy in memory" in in_memory
    (other,) = [m for m in changed if replaced.name in m]
    assert "the server holds its copy" in other
    # And it still answers from what it verified.
    assert holder.store.snapshot().num_specs > 0
    holder.store.close()


def test_a_deadline_bounds_only_its_block() -> None:
    assert remaining() is None
    with deadline(None):
        assert remaining() is None
    with deadline(5.0):
        left = remaining()
        assert left is not None and 4.0 < left <= 5.0
    assert remaining() is None


def test_the_store_reads_its_own_build_even_when_the_link_moves(tmp_path: Path) -> None:
    out = tmp_path / "ix"
    first = build_index([PAGES], out)
    store = IndexStore(out)
    build_index([PAGES], out)
    assert store.build_id == first.folder.name
    store.close()


def test_a_build_is_served_with_its_size_bounds_already_computed(
    holder: IndexHolder, tmp_path: Path
) -> None:
    """Computed in the loading thread, not by the first request priced on the event loop."""
    assert holder.store in bounds._BOUNDS
    second = build_index([PAGES], tmp_path / "second").folder
    _point(tmp_path / "ix", second)
    assert holder.reload_if_changed()
    assert holder.store in bounds._BOUNDS


def test_a_build_is_served_with_its_hash_directories_made(
    holder: IndexHolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made in the loading thread (10 to 15 ms at 1M specs), not by the first hash lookup
    on the event loop; the lookups of the served build then use them."""
    assert all(vars(s)["hash_directory"] is None for s in holder.store.snapshots.values())
    monkeypatch.setattr(snapshot_module, "DIRECTORY_MIN_SPECS", 1)  # the demo's 4,000 specs
    second = build_index([PAGES], tmp_path / "second").folder
    _point(tmp_path / "ix", second)
    assert holder.reload_if_changed()
    schema = build_schema()
    for snapshot in holder.store.snapshots.values():
        directory = vars(snapshot)["hash_directory"]
        assert directory is not None and directory[-1] == snapshot.num_specs
        for row in range(0, snapshot.num_specs, 97):
            full = snapshot.hash_of(row)
            query = f'{{ spec(hash: "{full[:7]}", tag: "{snapshot.tag}") {{ hash }} }}'
            answer = schema.answer_sync(query, None, Context(holder.store))
            assert answer.body is not None
            assert orjson.loads(answer.body) == {"data": {"spec": {"hash": full}}}
