"""Tarball sizes read by a process of their own give what reading them here gives.

The ingest of a large v3 mirror reads its spec manifests in a second process while it
parses the index (`PendingSizes`); these tests lower the threshold to 1 so that a small
generated mirror takes that path, and compare it with reading in this process, with a
broken manifest, a process that dies, and a build that stops.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from cachegql.demo import MirrorConfig, write_mirror
from cachegql.index.ingest.tarball_sizes import PendingSizes, tarball_sizes


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sizes")
    summary = write_mirror(MirrorConfig(specs=120, packages=30, stacks=2, seed=5), root)
    folder = summary.mirror / "v3" / "manifests" / "spec"
    broken = sorted(folder.glob("*/*.spec.manifest.json"))[7]
    broken.write_text('{"data": []}')  # a manifest without a tarball record
    return folder


def _started(specs: Path) -> tuple[PendingSizes, multiprocessing.process.BaseProcess]:
    """Sizes pending in a process of their own, and that process."""
    before = set(multiprocessing.active_children())
    pending = PendingSizes(specs, process_from=1)
    (child,) = set(multiprocessing.active_children()) - before
    return pending, child


def test_a_second_process_reads_what_this_one_reads(specs: Path) -> None:
    here = tarball_sizes(specs)
    pending, child = _started(specs)
    assert child.is_alive()

    assert pending.result() == here
    assert not child.is_alive()
    sizes, problems = here
    assert len(sizes) == 119 and all(size >= 0 for size in sizes.values())
    assert [p.message for p in problems] == ["spec manifest without a tarball size; ignored"]


def test_sizes_are_read_here_when_the_process_dies(specs: Path) -> None:
    pending, child = _started(specs)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join()

    assert pending.result() == tarball_sizes(specs)


def test_a_stopped_build_ends_the_reading_process(specs: Path) -> None:
    pending, child = _started(specs)
    pending.cancel()
    assert not child.is_alive()


def test_few_manifests_are_read_here(specs: Path) -> None:
    before = set(multiprocessing.active_children())
    pending = PendingSizes(specs, process_from=10_000)
    assert set(multiprocessing.active_children()) == before
    assert pending.result() == tarball_sizes(specs)


def test_a_folder_without_manifests_has_no_sizes(tmp_path: Path) -> None:
    assert PendingSizes(tmp_path / "none", process_from=1).result() == ({}, [])
