"""The fingerprints' looks at local mirrors taken by a helper process ahead of need
(index/ingest/look_ahead.py): each look is the one the build would take itself, whoever
takes it, and the build takes those a helper did not give.

Real local v3 mirrors (the demo generator's), a real helper process.
"""

from __future__ import annotations

import errno
import fcntl
import multiprocessing
import multiprocessing.context
import multiprocessing.resource_tracker
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index.ingest import helper_process, look_ahead
from cachegql.index.ingest.claims import EachClaims
from cachegql.index.ingest.identity import look
from cachegql.index.ingest.locations import Location
from cachegql.index.ingest.look_ahead import LookAhead
from tests.test_view_binaries import _held, _within

TAGS = ("develop", "v0.22")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tags of three local v3 mirrors each (a tag's mirrors copies of one generated
    mirror of 40 binaries, as a tag's stacks share much)."""
    root = tmp_path_factory.mktemp("look-ahead")
    for seed, tag in enumerate(TAGS, start=70):
        config = MirrorConfig(specs=40, packages=10, stacks=1, seed=seed, tag=tag)
        mirror = write_mirror(config, root / "generated" / tag).mirror
        for stack in ("root", "e4s", "hep"):
            shutil.copytree(mirror, root / tag / stack)
    return root


def _looks(root: Path) -> list[tuple[str, Location]]:
    return [(tag, Location(str(root / tag / s))) for tag in TAGS for s in ("root", "e4s", "hep")]


def _helper_done(ahead: LookAhead, deadline: float = 60.0) -> None:
    """Wait until the helper ended (once it took every look)."""
    helper = ahead._process
    assert helper is not None, "no helper started"
    helper.join(deadline)
    assert helper.exitcode is not None, "the helper did not end"


def _touch(path: Path) -> None:
    status = path.stat()
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))


def _a_spec_manifest(mirror: Location) -> Path:
    return next((mirror.path / "v3" / "manifests" / "spec").glob("*/*.spec.manifest.json"))


def _run(check: Callable[..., None], fork: bool, *args: object) -> None:
    """`check(*args)`; where the helper is to be forked, in a fresh interpreter, as a CLI
    build runs: threads other tests leave running here would have it spawned."""
    if not fork:
        check(*args)
        return
    process = multiprocessing.get_context("spawn").Process(target=check, args=args)
    process.start()
    try:
        process.join(120)
    finally:
        if process.exitcode is None:
            process.kill()
            process.join()
    assert process.exitcode == 0, "the check failed in its process (its traceback above)"


def _forked(ahead: LookAhead) -> bool:
    return isinstance(ahead._process, multiprocessing.context.ForkProcess)


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_looks_a_helper_took_are_the_builds_own(generated: Path, fork: bool) -> None:
    _run(_helper_took_looks, fork, generated, fork)


def _helper_took_looks(generated: Path, fork: bool) -> None:
    looks = _looks(generated)
    ahead = LookAhead(looks, ahead_from=1, fork=fork)
    try:
        ahead.start()
        assert _forked(ahead) == fork  # without other threads: forked unless told not to
        _helper_done(ahead)
        found = [ahead.look(tag, root) for tag, root in reversed(looks)]  # any order
    finally:
        ahead.close()
    assert ahead.helped == len(looks)  # it took them all before any was asked for
    assert found == [look(root) for _, root in reversed(looks)]
    assert all(stock is not None and stock.spec_manifests for stock in found)


def test_a_look_taken_ahead_is_of_the_mirror_as_it_was_then(
    generated: Path, tmp_path: Path
) -> None:
    """Taken before its tag's ingest, as the build's own is: a manifest touched since
    makes the next build's fingerprint differ (and its tag be read again)."""
    root = Path(shutil.copytree(generated, tmp_path / "src"))
    looks = _looks(root)
    before = [look(r) for _, r in looks]
    ahead = LookAhead(looks, ahead_from=1)
    try:
        ahead.start()
        _helper_done(ahead)
        _touch(_a_spec_manifest(looks[-1][1]))
        found = [ahead.look(tag, r) for tag, r in looks]
    finally:
        ahead.close()
    assert found == before
    assert look(looks[-1][1]) != before[-1]


def test_the_build_takes_the_looks_its_helper_did_not_give(generated: Path) -> None:
    looks = _looks(generated)
    ahead = LookAhead(looks, ahead_from=1)
    try:
        ahead.start()
        assert ahead._process is not None
        ahead._process.kill()
        ahead._process.join()
        found = [ahead.look(tag, root) for tag, root in looks]
    finally:
        ahead.close()
    assert found == [look(root) for _, root in looks]


def test_looks_asked_while_the_helper_takes_others_are_the_builds_own(
    generated: Path,
) -> None:
    """Asked at once, in order: the build and the helper share them out (whichever is
    free takes the next), none is given twice, and one asked again gives the same."""
    looks = _looks(generated) * 2
    ahead = LookAhead(looks, ahead_from=1)
    try:
        ahead.start()
        found = [ahead.look(tag, root) for tag, root in looks]
    finally:
        ahead.close()
    assert found == [look(root) for _, root in looks]
    assert ahead.helped <= len(set(looks))


@pytest.mark.parametrize("share", [True, False], ids=["shared", "reading-a-tag"])
def test_waiting_for_a_look_the_helper_took(generated: Path, share: bool) -> None:
    """The helper stopped holding the first look (SIGSTOP, as a slow look would). Shared
    (a fingerprint's looks), the build takes every other one meanwhile, then has the
    first once the helper goes on (given, or taken here if the helper ends without it).
    Not shared (a tag being read: the read waits, not the looks), it takes no other."""
    looks = _looks(generated)
    asked = looks if share else looks[:1]
    ahead = LookAhead(looks, ahead_from=1)
    try:
        ahead.start()
        helper = ahead._process
        assert helper is not None and ahead._claims is not None and helper.pid is not None
        os.kill(helper.pid, signal.SIGSTOP)
        taken_before = sum(ahead._claims._flags[:])  # none while it imports, as a rule
        ahead._claims._flags[0] = 1  # the first, as the helper takes it
        resumed = threading.Timer(1.0, os.kill, (helper.pid, signal.SIGCONT))
        resumed.start()
        found: list[object] = []
        _within(60, lambda: found.extend(ahead.look(t, r, share=share) for t, r in asked))
        resumed.join()
    finally:
        ahead.close()
    assert found == [look(root) for _, root in asked]
    if share:
        assert ahead.helped <= max(taken_before, 1)
    else:  # the others the helper gave; the build took the one asked at most (once it ended)
        assert len(ahead._done) - ahead.helped <= 1, (len(ahead._done), ahead.helped)


def test_a_helper_gone_holding_the_claims_costs_one_wait_not_one_a_look(
    generated: Path,
) -> None:
    looks = _looks(generated) + [
        (f"more{n}", root) for n in range(6) for _, root in _looks(generated)[:2]
    ]
    ahead = LookAhead(looks, ahead_from=1)
    found: list[object] = []
    try:
        ahead.start()
        assert ahead._process is not None and ahead._claims is not None
        with _held(ahead._claims._flags.get_lock()):  # as by the helper, killed holding it
            ahead._process.kill()
            ahead._process.join()
            # A second a look would be 18 s: each of them waits on the lock only once.
            _within(10, lambda: found.extend(ahead.look(tag, root) for tag, root in looks))
    finally:
        ahead.close()
    assert found == [look(root) for _, root in looks]


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_ctrl_c_while_the_helper_starts_is_left_to_the_build(
    generated: Path, capfd: pytest.CaptureFixture[str], fork: bool
) -> None:
    """Ctrl-C reaches every process of the terminal's group: a helper still starting (a
    fresh interpreter's imports, a fork's first steps) neither stops nor prints a
    traceback; it goes on, and the build decides."""
    _run(_ctrl_c_left_to_the_build, fork, generated, fork)
    assert "Traceback" not in capfd.readouterr().err


def _ctrl_c_left_to_the_build(generated: Path, fork: bool) -> None:
    looks = _looks(generated)
    ahead = LookAhead(looks, ahead_from=1, fork=fork)
    try:
        ahead.start()
        assert ahead._process is not None and ahead._process.pid is not None
        assert _forked(ahead) == fork
        os.kill(ahead._process.pid, signal.SIGINT)  # within its imports, or its first steps
        _helper_done(ahead)
        assert ahead._process.exitcode == 0
        found = [ahead.look(tag, root) for tag, root in looks]
    finally:
        ahead.close()
    assert found == [look(root) for _, root in looks] and ahead.helped == len(looks)


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_no_process_to_start_leaves_the_looks_to_the_build(generated: Path, fork: bool) -> None:
    """A process limit reached (EAGAIN) as the helper, or the resource tracker before it,
    would start: no helper, and the build takes every look, as it would alone."""
    _run(_no_process_to_start, fork, generated, fork)


def _no_process_to_start(generated: Path, fork: bool) -> None:
    tried: list[str] = []

    def cannot(kind: str) -> Callable[..., None]:
        def start(*args: object, **kwargs: object) -> None:
            tried.append(kind)
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

        return start

    looks = _looks(generated)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(multiprocessing.resource_tracker, "ensure_running", cannot("tracker"))
        patch.setattr(multiprocessing.context.SpawnProcess, "start", cannot("spawn"))
        patch.setattr(multiprocessing.context.ForkProcess, "start", cannot("fork"))
        ahead = LookAhead(looks, ahead_from=1, fork=fork)
        try:
            ahead.start()
            assert ahead._process is None
            found = [ahead.look(tag, root) for tag, root in looks]
        finally:
            ahead.close()
    # Forked (a fresh interpreter: no other thread), no tracker is asked for.
    assert tried == (["fork"] if fork else ["tracker", "spawn"]), tried
    assert found == [look(root) for _, root in looks] and ahead.helped == 0


def test_a_forked_helper_holds_none_of_the_builds_files(generated: Path, tmp_path: Path) -> None:
    """A helper left behind by a build killed with SIGKILL must not keep the build's lock:
    forked, it lets go of every file it was given a copy of before its first look."""
    _run(_lets_go_of_the_lock, True, generated, tmp_path / "out.builds.lock")


def _lets_go_of_the_lock(generated: Path, lock: Path) -> None:
    build_lock = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(build_lock, fcntl.LOCK_EX)
    looks = [(f"tag{n}", root) for n in range(300) for _, root in _looks(generated)]
    ahead = LookAhead(looks, ahead_from=1)
    try:
        ahead.start()
        assert _forked(ahead) and ahead._process is not None and ahead._claims is not None
        with _held(ahead._claims._flags.get_lock()):  # the helper kept from its end
            os.close(build_lock)  # the build gone: only a copy of its own would hold it
            other = os.open(lock, os.O_RDWR)
            try:
                _within(30, lambda: _lock_when_free(other))
                assert ahead._process.is_alive()  # not let go of by ending
            finally:
                os.close(other)
    finally:
        ahead.close()


def _lock_when_free(fd: int) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            time.sleep(0.01)
            continue
        return


def test_few_spec_manifests_start_no_helper(generated: Path) -> None:
    looks = _looks(generated)
    assert look_ahead.AHEAD_FROM > 6 * 40  # the default: these are too few
    ahead = LookAhead(looks)
    try:
        ahead.start()
        assert ahead._process is None
        found = [ahead.look(tag, root) for tag, root in looks]
        unforeseen = Location(str(generated / "generated" / "develop" / "mirror"))
        assert ahead.look("develop", unforeseen) == look(unforeseen)
    finally:
        ahead.close()
    assert found == [look(root) for _, root in looks] and ahead.helped == 0


def test_each_piece_is_claimed_once() -> None:
    claims = EachClaims(multiprocessing.get_context("spawn"), 3)
    alive = lambda: True  # noqa: E731 (the other process)
    assert [claims.take(1, alive), claims.take(1, alive), claims.take(0, alive)] == [
        True,
        False,
        True,
    ]


def test_a_claim_gives_up_when_the_other_process_is_gone_holding_the_lock() -> None:
    claims = EachClaims(multiprocessing.get_context("spawn"), 2)
    asked: list[bool | None] = []
    with _held(claims._flags.get_lock()):  # as by a helper killed while it held it
        _within(10, lambda: asked.append(claims.take(0, lambda: False)))
    assert asked == [None]
    assert claims.take(0, lambda: False) is True  # given back: taken at once


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_a_helper_that_does_not_end_is_killed_within_its_bound(fork: bool) -> None:
    """A helper still alive 2 s after it was told to end is killed: the build never waits
    longer on it (a forked one lets go of the pipe `join` would wait on)."""
    _run(_killed_within_its_bound, fork, fork)


def _killed_within_its_bound(fork: bool) -> None:
    context = helper_process.helper_context(fork)
    assert context.get_start_method() == ("fork" if fork else "spawn")
    receiver, sender = context.Pipe(duplex=False)
    with helper_process.stops_held(tracker=not fork):
        process = helper_process.start_helper(context, _deaf_helper, (sender,))
    assert process is not None
    assert receiver.recv() == "deaf"  # past its start: it has let go of its files
    started = time.monotonic()
    helper_process.stop_helper(process, receiver)
    assert time.monotonic() - started < 10
    sender.close()


def _deaf_helper(sender: Connection) -> None:
    helper_process.as_helper(sender)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as one stuck would: never ends itself
    sender.send("deaf")
    time.sleep(120)
