"""A v3 mirror's views read by the spec-manifest reader's process give what reading them
in the build gives: the same stacks, sizes and problems in the same order, and the same
reads known to a recording opener (a view whose blob failed to read leaves its tag
without a fingerprint either way)."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index import StrictModeError, build_index
from cachegql.index.ingest import tarball_sizes
from cachegql.index.ingest.buildcache import (
    V3_SPECS,
    CacheData,
    _view_blobs,
    read_mirror,
)
from cachegql.index.ingest.claims import ViewClaims
from cachegql.index.ingest.dag_nodes import Database
from cachegql.index.ingest.identity import RecordingOpener
from cachegql.index.ingest.limits import EXPANSION_FLOOR, SourceLimits
from cachegql.index.ingest.listed_indexes import V3_INDEX
from cachegql.index.ingest.locations import Location, Opener
from cachegql.index.ingest.tables import TagTable
from cachegql.index.ingest.tag_graph import TagGraph
from cachegql.index.ingest.tarball_sizes import PendingSizes
from cachegql.index.ingest.view_binaries import ViewBlob, ViewOutcome, view_outcome


def _views(mirror: Path) -> list[Path]:
    return sorted(p for p in mirror.joinpath(*V3_INDEX).iterdir() if p.is_dir())


def _blob(mirror: Path, view: Path) -> Path:
    checksum: str = json.loads((view / "index.manifest.json").read_text())["data"][0]["checksum"]
    return mirror / "blobs" / "sha256" / checksum[:2] / checksum


def _name_blob(mirror: Path, view: Path, data: bytes) -> None:
    """Give `view` a new blob holding `data`, named and listed by its checksum."""
    checksum = hashlib.sha256(data).hexdigest()
    blob = mirror / "blobs" / "sha256" / checksum[:2] / checksum
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    manifest = json.loads((view / "index.manifest.json").read_text())
    manifest["data"][0]["checksum"] = checksum
    (view / "index.manifest.json").write_text(json.dumps(manifest))


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("views")
    summary = write_mirror(MirrorConfig(specs=200, packages=30, stacks=6, seed=3), root)
    return summary.mirror


@pytest.fixture(scope="module")
def damaged(mirror: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mirror with one view of each kind of damage, the others intact."""
    copy = tmp_path_factory.mktemp("damaged") / "mirror"
    shutil.copytree(mirror, copy)
    views = _views(copy)
    assert len(views) >= 6
    # A blob that is not what its manifest says: a failed read.
    blob = _blob(copy, views[0])
    blob.write_bytes(blob.read_bytes()[:-10])
    # A manifest that is not JSON: skipped before any blob is read.
    (views[1] / "index.manifest.json").write_text("{not json")
    # A blob with the right checksum that is not an index.
    _name_blob(copy, views[2], b'{"database": {"version": "8", "installs": [1, 2]}}')
    # A blob its manifest names but that is missing.
    _blob(copy, views[3]).unlink()
    # A gzipped blob that inflates over the default limit (`--max-expansion`).
    padded = _blob(copy, views[4]).read_bytes() + b" " * (EXPANSION_FLOOR + 1)
    _name_blob(copy, views[4], gzip.compress(padded))
    return copy


def _read(
    mirror: Path,
    process_from: int,
    monkeypatch: pytest.MonkeyPatch,
    limits: SourceLimits | None = None,
) -> dict[str, Any]:
    monkeypatch.setattr(tarball_sizes, "PROCESS_FROM", process_from)
    opener = RecordingOpener(Opener(limits=limits))
    data = read_mirror(Location(str(mirror)), opener, "root")
    return {
        "stacks": {label: sorted(hashes) for label, hashes in data.stacks.items()},
        "problems": data.problems,
        "sizes": data.sizes,
        "digests": opener.digests,
        "failures": opener.failures,
        "read by a process": data.helper_rss_mb > 0,
    }


@pytest.mark.parametrize("which", ["intact", "damaged"])
def test_views_read_by_the_reader_are_what_the_build_reads(
    which: str, mirror: Path, damaged: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = mirror if which == "intact" else damaged
    there = _read(source, 1, monkeypatch)
    here = _read(source, 10**9, monkeypatch)
    assert there.pop("read by a process") and not here.pop("read by a process")
    assert there == here
    views = _views(source)
    if which == "intact":
        assert not here["problems"] and not here["failures"]
        assert list(here["stacks"]) == ["root", *(v.name for v in views)]
        return
    skipped = [p for p in here["problems"] if "view skipped" in p.message]
    assert [p.path for p in skipped] == [str(v) for v in views[:5]]
    assert "checksum mismatch" in skipped[0].message
    assert "not valid JSON" in skipped[1].message
    assert skipped[3].message.endswith(": no such file")
    assert "a compression bomb" in skipped[4].message
    # The two failed blob reads leave the tag without a fingerprint; the others do not.
    assert set(here["failures"]) == {str(_blob(source, v)) for v in (views[0], views[3])}
    assert list(here["stacks"]) == ["root", *(v.name for v in views[5:])]


def test_the_reader_reads_views_within_the_builds_limits(
    damaged: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The view refused as a compression bomb by default is read under a higher limit,
    by the reader as by the build."""
    view = _views(damaged)[4]
    limits = SourceLimits(max_expansion=1_000_000)
    there = _read(damaged, 1, monkeypatch, limits)
    here = _read(damaged, 10**9, monkeypatch, limits)
    assert there.pop("read by a process") and not here.pop("read by a process")
    assert there == here
    assert view.name in here["stacks"]
    assert not [p for p in here["problems"] if p.path == str(view)]


def _shared(root: Location) -> tuple[list[ViewBlob], list[ViewOutcome], RecordingOpener]:
    """A mirror's readable views, their outcomes read here, and the opener that read them."""
    views = [v for v in _view_blobs(root, Opener()) if isinstance(v, ViewBlob)]
    here = RecordingOpener(Opener())
    return views, [view_outcome(view, here) for view in views], here


@pytest.mark.parametrize("which", ["intact", "damaged"])
def test_views_shared_out_between_the_reader_and_the_build_are_each_read_once(
    which: str, mirror: Path, damaged: Path
) -> None:
    """The build takes views from the last while it waits, the reader from the first.
    Here the build takes one and waits for the reader, which takes all the others; the
    outcomes and the reads the opener knows are those of reading every view here."""
    root = Location(str(mirror if which == "intact" else damaged))
    views, expected, here = _shared(root)
    opener = RecordingOpener(Opener())
    pending = PendingSizes(root.join(*V3_SPECS).path, process_from=1, views=views)
    taken: list[str] = []

    def read_here(view: ViewBlob) -> ViewOutcome:
        taken.append(view.name)
        assert pending._receiver is not None and pending._receiver.poll(60)  # the reader is done
        return view_outcome(view, opener)

    try:
        pending.read_views_here(read_here)
        pending.result()
    finally:
        pending.cancel()
    assert taken == [views[-1].name]
    assert list(pending.views_read_here) == [len(views) - 1]
    assert pending.view_outcomes is not None and len(pending.view_outcomes) == len(views) - 1
    assert pending.view_outcomes_read(opener) == expected
    assert (opener.digests, opener.failures) == (here.digests, here.failures)
    if which == "damaged":
        assert any(outcome.read_failed for outcome in pending.view_outcomes)


def test_views_left_when_the_reader_dies_are_read_by_the_build(damaged: Path) -> None:
    """The build took one view, then the reader was killed: the build takes every view
    the reader had not, and reads the sizes itself, as if no reader had run."""
    root = Location(str(damaged))
    views, expected, here = _shared(root)
    opener = RecordingOpener(Opener())
    pending = PendingSizes(root.join(*V3_SPECS).path, process_from=1, views=views)
    process, claims = pending._process, pending._claims
    assert process is not None and process.pid is not None and claims is not None
    pid = process.pid
    taken: list[str] = []
    reader_took: list[int] = []

    def read_then_kill(view: ViewBlob) -> ViewOutcome:
        if not taken:
            os.kill(pid, signal.SIGKILL)
            process.join(30)
            reader_took.append(int(claims._bounds[0]))
        taken.append(view.name)
        return view_outcome(view, opener)

    try:
        pending.read_views_here(read_then_kill)
        sizes = pending.result()
    finally:
        pending.cancel()
    assert taken[0] == views[-1].name and pending.view_outcomes is None
    assert sorted(pending.views_read_here) == list(range(reader_took[0], len(views)))
    assert pending.view_outcomes_read(opener) == expected
    assert (opener.digests, opener.failures) == (here.digests, here.failures)
    assert sizes == tarball_sizes.tarball_sizes(root.join(*V3_SPECS).path)


def test_a_reader_killed_holding_the_claims_is_given_up_on(damaged: Path) -> None:
    """The lock the claims share, held when the reader is killed: the build waits on it
    only while the reader lives, then reads the sizes and every view itself."""
    root = Location(str(damaged))
    views, expected, here = _shared(root)
    opener = RecordingOpener(Opener())
    pending = PendingSizes(root.join(*V3_SPECS).path, process_from=1, views=views)
    assert pending._process is not None and pending._process.pid is not None
    assert pending._claims is not None
    os.kill(pending._process.pid, signal.SIGKILL)
    try:
        with _held(pending._claims._bounds.get_lock()):  # as by the reader, killed holding it
            _within(10, lambda: pending.read_views_here(lambda view: view_outcome(view, opener)))
        assert pending.views_read_here == {}
        sizes = pending.result()
    finally:
        pending.cancel()
    assert pending.view_outcomes is None
    assert pending.view_outcomes_read(opener) == expected
    assert (opener.digests, opener.failures) == (here.digests, here.failures)
    assert sizes == tarball_sizes.tarball_sizes(root.join(*V3_SPECS).path)


def test_without_shared_memory_the_reader_reads_every_view(
    mirror: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claims need a semaphore; where none can be made the reader still runs, as before
    views were shared, and reads them all."""

    def no_semaphores(*args: object) -> ViewClaims:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(tarball_sizes, "ViewClaims", no_semaphores)
    root = Location(str(mirror))
    views, expected, _ = _shared(root)
    opener = RecordingOpener(Opener())
    pending = PendingSizes(root.join(*V3_SPECS).path, process_from=1, views=views)
    try:
        assert pending._process is not None and pending._claims is None
        pending.read_views_here(lambda view: view_outcome(view, opener))
        pending.result()
    finally:
        pending.cancel()
    assert pending.views_read_here == {} and pending.view_outcomes == expected
    assert pending.peak_rss_mb > 0


def _within(seconds: float, call: Callable[[], object]) -> None:
    """Run `call`, failing (not hanging) if it has not returned within `seconds`."""
    done = threading.Event()

    def run() -> None:
        call()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(seconds), f"still waiting after {seconds} s"


def test_claims_from_both_ends_meet_once() -> None:
    claims = ViewClaims(multiprocessing.get_context("spawn"), 5)
    alive = lambda: True  # noqa: E731
    taken = [claims.first(alive), claims.last(alive), claims.last(alive)]
    taken += [claims.first(alive), claims.first(alive)]
    assert taken == [0, 4, 3, 1, 2]
    assert claims.first(alive) is None and claims.last(alive) is None
    assert ViewClaims(multiprocessing.get_context("spawn"), 0).last(alive) is None


def test_a_claim_gives_up_when_the_other_process_died_holding_the_lock() -> None:
    """A process killed while it held the lock never gives it back: the other waits only
    as long as the other lives, not forever."""
    claims = ViewClaims(multiprocessing.get_context("spawn"), 3)
    asked: list[int | None] = []

    def gone() -> bool:
        return False

    with _held(claims._bounds.get_lock()):
        _within(10, lambda: asked.append(claims.last(gone)))
    assert asked == [None]
    assert claims.last(gone) == 2  # given back: taken at once


@contextlib.contextmanager
def _held(lock: Any) -> Iterator[None]:
    """A claims' lock held by a thread of its own (a lock's owner is a thread: one
    that ended could be taken for the next with its number), given back on leaving."""
    taken, leave = threading.Event(), threading.Event()

    def hold() -> None:
        lock.acquire()
        taken.set()
        leave.wait(60)
        lock.release()

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert taken.wait(10)
    try:
        yield
    finally:
        leave.set()
        holder.join(10)


def test_a_view_listing_binaries_the_index_lacks_is_named_and_the_rest_kept(
    mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view written after the index (as a stack's pipeline pushes it) can list a binary
    the index does not hold yet: a problem naming the view, not a failed build."""
    copy = Path(shutil.copytree(mirror, tmp_path / "mirror"))
    view = _views(copy)[0]
    document = json.loads(_blob(copy, view).read_bytes())
    installs = document["database"]["installs"]
    listed = sorted(h for h, record in installs.items() if record["in_buildcache"])
    record = json.loads(json.dumps(installs[listed[0]]))
    for extra in ("a" * 32, "b" * 32):
        installs[extra] = {**record, "spec": {**record["spec"], "hash": extra}}
    _name_blob(copy, view, json.dumps(document).encode())

    there = _read(copy, 1, monkeypatch)
    here = _read(copy, 10**9, monkeypatch)
    assert there.pop("read by a process") and not here.pop("read by a process")
    assert there == here
    assert here["stacks"][view.name] == listed
    assert [(p.path, p.message) for p in here["problems"]] == [
        (
            str(view),
            f"view lists 2 binaries the mirror's index does not hold ({'a' * 32}, "
            f"{'b' * 32}); left out of stack {view.name}",
        )
    ]
    report = build_index([copy], tmp_path / "ix", tag="develop")
    assert report.specs == len(read_mirror(Location(str(mirror)), Opener(), "root").sizes)
    with pytest.raises(StrictModeError, match="view lists 2 binaries"):
        build_index([copy], tmp_path / "strict", tag="develop", strict=True)


def test_a_stack_hash_that_is_no_node_is_a_bug_not_a_dropped_binary() -> None:
    """`held_binaries` keeps a view's binaries to the index's nodes; a reader that did
    not would be told, not have its binaries silently left out."""
    graph = TagGraph("develop")
    graph.add(CacheData("cache", Database("cache", 8), {"root": {"a" * 32}}))
    with pytest.raises(RuntimeError, match="binaries of tag develop that are no node"):
        list(graph.fill(TagTable("develop"), 0))
