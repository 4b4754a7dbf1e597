"""Atomic publishing: `out` links to a complete build; failed or killed builds change nothing."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

from cachegql.index import BuildError, BuildReport, IndexStore, build_index
from cachegql.index.disk.publish import (
    GRACE_SECONDS,
    KEEP_BUILDS,
    PARTIAL,
    REPLACED,
    PublishError,
    builds_folder,
)
from cachegql.index.ingest import StrictModeError
from cachegql.schema import Context, build_schema
from cachegql.server.holder import IndexHolder
from tests.conftest import PAGES
from tests.page_factory import page_text, spec, write_page

ROOT = Path(__file__).resolve().parents[1]
LOOSE = PAGES / "loose" / "zlib-develop.txt"


def _finished(out: Path) -> list[Path]:
    """Complete builds in out's builds folder."""
    folder = builds_folder(out)
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.endswith(PARTIAL))


def _partials(out: Path) -> list[Path]:
    folder = builds_folder(out)
    return sorted(folder.glob("*" + PARTIAL)) if folder.is_dir() else []


def _marker(build: Path) -> Path:
    """The file whose mtime says when `build` stopped being current."""
    return build.with_name(build.name + REPLACED)


def _served(out: Path) -> dict[str, Any]:
    """What a server opening `out` now would serve: build id and counts."""
    store = IndexStore(out)
    try:
        return {
            "build_id": store.build_id,
            "specs": store.manifest["specs"],
            "tags": {tag: store.snapshot(tag).num_specs for tag in store.tags},
            "packages": {tag: store.snapshot(tag).num_packages for tag in store.tags},
        }
    finally:
        store.close()


# (a) publishing and rebuilding


def test_build_publishes_out_as_link_to_complete_build(
    tmp_path: Path, expected: dict[str, dict[str, dict[str, Any]]]
) -> None:
    """`out` is a symlink into out.builds/ whose target holds manifest.json; no partial left."""
    out = tmp_path / "ix"
    report = build_index([PAGES], out)
    assert out.is_symlink()
    target = out.resolve()
    assert target == report.folder
    assert target.parent == builds_folder(out).resolve()
    manifest = json.loads((target / "manifest.json").read_text())
    assert manifest["build_id"] == target.name
    assert manifest["specs"] == sum(len(specs) for specs in expected.values())
    assert _served(out)["tags"] == {tag: len(specs) for tag, specs in expected.items()}
    assert _partials(out) == []


def test_link_is_relative_so_the_index_can_be_moved(tmp_path: Path) -> None:
    """Moving the parent folder keeps `out` usable (the link does not embed tmp_path)."""
    out = tmp_path / "a" / "ix"
    build_index([LOOSE], out)
    build_id = _served(out)["build_id"]
    (tmp_path / "a").rename(tmp_path / "b")
    assert _served(tmp_path / "b" / "ix")["build_id"] == build_id


def test_rebuilds_keep_every_build_replaced_within_the_grace_period(tmp_path: Path) -> None:
    """Each rebuild repoints `out`; however many there are, the builds replaced less than
    GRACE_SECONDS ago all stay, each marked when it stopped being current."""
    out = tmp_path / "ix"
    folders = []
    for _ in range(KEEP_BUILDS + 2):
        before = time.time()
        report = build_index([LOOSE], out)
        folders.append(report.folder)
        assert out.resolve() == report.folder
        assert _served(out)["build_id"] == report.folder.name
        if len(folders) > 1:
            assert before - 1 <= _marker(folders[-2]).stat().st_mtime <= time.time() + 1
    assert _finished(out) == sorted(folders)
    assert sorted(builds_folder(out).glob("*" + REPLACED)) == sorted(map(_marker, folders[:-1]))


def test_builds_replaced_before_the_grace_period_go_but_the_newest_stay(tmp_path: Path) -> None:
    """Replaced more than GRACE_SECONDS ago, builds are deleted at the next build, except
    the newest KEEP_BUILDS (the current one and those replaced last); their marks go too."""
    out = tmp_path / "ix"
    folders = [build_index([LOOSE], out).folder for _ in range(5)]
    long_ago = time.time() - GRACE_SECONDS - 100
    for age, folder in enumerate(folders[:-1]):  # replaced in this order, long ago
        os.utime(_marker(folder), (long_ago + age, long_ago + age))
    newest = build_index([LOOSE], out).folder
    kept = [newest, folders[-1], folders[-2]]  # current, replaced just now, replaced last
    assert len(kept) == KEEP_BUILDS
    assert _finished(out) == sorted(kept)
    assert sorted(builds_folder(out).glob("*" + REPLACED)) == sorted(map(_marker, kept[1:]))


def test_a_build_replaced_by_hand_is_kept_for_the_grace_period(tmp_path: Path) -> None:
    """A build that stopped being current without `cachegql index` (a link swapped by
    hand) has no mark: it is marked when first seen, and kept from then on."""
    out = tmp_path / "ix"
    folders = [build_index([LOOSE], out).folder for _ in range(KEEP_BUILDS)]
    long_ago = time.time() - GRACE_SECONDS - 100
    for folder in folders[:-1]:
        os.utime(_marker(folder), (long_ago, long_ago))
    swap = tmp_path / ".ix.swap"
    swap.symlink_to(Path(builds_folder(out).name) / folders[0].name)
    swap.replace(out)  # rolled back by hand: folders[-1] is replaced, unmarked
    newest = build_index([LOOSE], out).folder
    assert _finished(out) == sorted([newest, folders[0], folders[-1]])
    assert _marker(folders[-1]).is_file()


def test_rebuild_keeps_the_previous_build_for_running_servers(tmp_path: Path) -> None:
    """After every rebuild the build it replaced still exists, even for builds in one second."""
    out = tmp_path / "ix"
    previous: BuildReport | None = None
    for number in range(16):
        report = build_index([LOOSE], out)
        if previous is not None:
            kept = [p.name for p in _finished(out)]
            assert previous.folder.is_dir(), (
                f"rebuild #{number + 1} ({report.folder.name}) deleted the build it replaced "
                f"({previous.folder.name}); kept {kept}"
            )
        previous = report


def test_empty_folder_at_out_becomes_the_link(tmp_path: Path) -> None:
    """An empty folder (e.g. made by a deploy script) is replaced by the index link."""
    out = tmp_path / "ix"
    out.mkdir()
    build_index([LOOSE], out)
    assert out.is_symlink()
    assert _served(out)["tags"] == {"develop": 3}


# (b) failed builds leave the previous index in place


def _strict_failure(folder: Path) -> tuple[list[Path], bool, type[Exception]]:
    write_page(folder / "good" / "specs.md", page_text([spec("g")]))
    write_page(folder / "bad" / "specs.md", page_text([spec("b", size="abc")]))
    return [folder], True, StrictModeError


def _no_pages(folder: Path) -> tuple[list[Path], bool, type[Exception]]:
    write_page(folder / "README.md", "# notes\n")
    write_page(folder / "data.json", "{}\n")
    return [folder], False, BuildError


def _only_broken_pages(folder: Path) -> tuple[list[Path], bool, type[Exception]]:
    write_page(folder / "a" / "specs.md", page_text(spec_details="[{"))
    write_page(folder / "b" / "specs.md", page_text([spec("b", hash="NOT-A-HASH")]))
    return [folder], False, BuildError


def _empty_spec_details(folder: Path) -> tuple[list[Path], bool, type[Exception]]:
    write_page(folder / "a" / "specs.md", page_text([]))
    return [folder], False, BuildError


FAILURES = {
    "strict-malformed-page": _strict_failure,
    "no-pages": _no_pages,
    "only-broken-pages": _only_broken_pages,
    "pages-without-specs": _empty_spec_details,
}


@pytest.mark.parametrize("make_sources", FAILURES.values(), ids=FAILURES.keys())
def test_failed_build_leaves_previous_index_intact(tmp_path: Path, make_sources: Any) -> None:
    """Same link target, same build id and counts, and no .partial folder afterwards."""
    out = tmp_path / "ix"
    build_index([PAGES], out)
    link_before = out.readlink()
    served_before = _served(out)
    builds_before = _finished(out)

    sources, strict, error = make_sources(tmp_path / "src")
    with pytest.raises(error):
        build_index(sources, out, strict=strict)

    assert out.readlink() == link_before
    assert _served(out) == served_before
    assert _finished(out) == builds_before
    assert _partials(out) == []


def test_build_error_says_nothing_was_published(tmp_path: Path) -> None:
    """The BuildError message tells the user why and that the index was not touched."""
    sources, _, _ = _only_broken_pages(tmp_path / "src")
    with pytest.raises(BuildError) as caught:
        build_index(sources, tmp_path / "ix")
    message = str(caught.value)
    assert "no specs found" in message
    assert "nothing was published" in message
    assert str(tmp_path / "src") in message  # the first problem names its file
    assert not (tmp_path / "ix").exists()


# (c) a build killed mid-way


# The real `cachegql index`, in a child process that SIGKILLs itself right after the
# build has written its first tag: a half-written build, killed at a known point.
KILLED_MID_WRITE = """
import os, signal, sys
import cachegql.index.disk.write as write
real_write_tag = write.write_tag

def write_tag_then_die(*args, **kwargs):
    real_write_tag(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)

write.write_tag = write_tag_then_die
from cachegql.server.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_killed_build_leaves_previous_index_serving(tmp_path: Path) -> None:
    """SIGKILL while out.builds/*.partial exists: `out` still points to the previous build."""
    out = tmp_path / "ix"
    build_index([PAGES], out)
    link_before = out.readlink()
    served_before = _served(out)

    command = [sys.executable, "-c", KILLED_MID_WRITE, "index", str(PAGES), "--out", str(out)]
    process = subprocess.run(command, capture_output=True, timeout=60, check=False)
    assert process.returncode == -signal.SIGKILL, process.stderr

    partials = _partials(out)
    assert len(partials) == 1  # the half-written build, never published
    assert (partials[0] / "tags" / "0").is_dir() and not (partials[0] / "tags" / "1").exists()
    assert out.readlink() == link_before
    assert _served(out) == served_before

    # The next build removes the leftover at once (its writer is dead: the lock is free).
    report = build_index([LOOSE], out)
    assert out.resolve() == report.folder
    assert _served(out)["tags"] == {"develop": 3}
    assert _partials(out) == []


# (d) refusing to overwrite what is not an index link


def test_non_empty_folder_at_out_is_refused_and_untouched(tmp_path: Path) -> None:
    """A plain folder with files is not replaced: PublishError, contents unchanged."""
    out = tmp_path / "ix"
    write_page(out / "important.txt", "keep me\n")
    write_page(out / "sub" / "more.txt", "and me\n")
    with pytest.raises(PublishError, match="not an index link"):
        build_index([PAGES], out)
    assert not out.is_symlink()
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "important.txt",
        "sub",
        "sub/more.txt",
    ]
    assert (out / "important.txt").read_text() == "keep me\n"
    assert _partials(out) == []


def test_regular_file_at_out_is_refused_and_untouched(tmp_path: Path) -> None:
    """A file at --out is not replaced either."""
    out = write_page(tmp_path / "ix", "not an index\n")
    with pytest.raises(PublishError):
        build_index([PAGES], out)
    assert out.read_text() == "not an index\n"


# (e) the server's holder picks up new builds and ignores broken ones


def test_holder_reloads_a_newly_published_build(tmp_path: Path) -> None:
    """reload_if_changed() is False until a new build is published, then True and serving it."""
    out = tmp_path / "ix"
    first = build_index([PAGES], out)
    holder = IndexHolder(out)
    old = holder.store
    try:
        assert holder.reload_if_changed() is False
        second = build_index([LOOSE], out)
        assert holder.reload_if_changed() is True
        assert holder.store.build_id == second.folder.name != first.folder.name
        assert holder.store.tags == ["develop"]
        assert holder.store.snapshot().num_specs == 3
        assert holder.reload_if_changed() is False
    finally:
        old.close()
        holder.store.close()


def test_holder_keeps_serving_when_link_points_at_a_broken_build(tmp_path: Path) -> None:
    """A build whose manifest.json is not JSON is not loaded; the old store keeps serving."""
    out = tmp_path / "ix"
    good = build_index([PAGES], out)
    holder = IndexHolder(out)
    store = holder.store
    try:
        specs_before = store.snapshot().num_specs
        broken = builds_folder(out) / "broken-build"
        broken.mkdir()
        (broken / "manifest.json").write_text('{"format": 1, "build_id": ')
        swap = tmp_path / ".ix.swap"
        swap.symlink_to(broken)
        swap.replace(out)  # os.replace: the link is swapped in one rename

        assert holder.reload_if_changed() is False
        assert holder.reload_if_changed() is False  # still broken: still the old store
        assert holder.store is store
        assert holder.store.build_id == good.folder.name
        assert holder.store.snapshot().num_specs == specs_before
    finally:
        store.close()


def test_holder_recovers_after_a_broken_build_is_replaced(tmp_path: Path) -> None:
    """Once a good build is published over the broken one, the holder switches to it."""
    out = tmp_path / "ix"
    build_index([PAGES], out)
    holder = IndexHolder(out)
    old = holder.store
    try:
        broken = builds_folder(out) / "broken-build"
        broken.mkdir()
        (broken / "manifest.json").write_text("not json")
        swap = tmp_path / ".ix.swap"
        swap.symlink_to(broken)
        swap.replace(out)  # os.replace: the link is swapped in one rename
        assert holder.reload_if_changed() is False
        fixed = build_index([LOOSE], out)
        assert holder.reload_if_changed() is True
        assert holder.store.build_id == fixed.folder.name
    finally:
        old.close()
        holder.store.close()


def test_a_replaced_index_is_freed_by_reference_counting_alone(tmp_path: Path) -> None:
    """No reference cycle keeps a snapshot alive: after a reload, the old one is gone at
    once, with the cycle collector off and never run."""
    out = tmp_path / "ix"
    build_index([PAGES], out)
    holder = IndexHolder(out)
    schema = build_schema()
    query = """{ specs(search: "torch scater", first: 5) { nodes { hash package { name
                 versions stacks compilers } } facets { stacks { value } versions { value } } }
               stacks { name targets { value } } package(name: "zlib") { numSpecsByStack {
                 stack } } }"""
    result = schema.execute_sync(query, context_value=Context(store=holder.store))
    assert result.errors is None and result.data is not None and result.data["specs"]["nodes"]
    failed = schema.execute_sync(
        '{ spec(hash: "0") { hash } }', context_value=Context(holder.store)
    )
    assert failed.errors and failed.errors[0].extensions == {"code": "BAD_USER_INPUT"}
    old_store = weakref.ref(holder.store)
    old_snapshots = [weakref.ref(s) for s in holder.store.snapshots.values()]
    del result, failed
    build_index([LOOSE], out)
    gc.disable()
    try:
        assert holder.reload_if_changed()
        assert old_store() is None
        assert [ref() for ref in old_snapshots] == [None] * len(old_snapshots)
    finally:
        gc.enable()


def test_reloads_do_not_accumulate_frozen_objects(tmp_path: Path) -> None:
    """Each load freezes the new index for the collector's sake; the replaced one must
    leave the frozen set again (freed), or every reload would leak a whole index."""
    out = tmp_path / "ix"
    build_index([PAGES], out)
    holder = IndexHolder(out)
    schema = build_schema()
    query = '{ specs(search: "zlib", first: 3) { nodes { package { name versions } } } }'
    counts = []
    for round_ in range(6):
        assert schema.execute_sync(query, context_value=Context(store=holder.store)).data
        build_index([PAGES if round_ % 2 else LOOSE], out)
        assert holder.reload_if_changed()
        counts.append(gc.get_freeze_count())
    # The fixture index is ~300 frozen objects: a leak would grow the count that much a round.
    assert max(counts[1::2]) - min(counts[1::2]) < 50, counts
    assert max(counts[::2]) - min(counts[::2]) < 50, counts
