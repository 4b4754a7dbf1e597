"""Tarball sizes from a v3 mirror's spec manifests (and its views' binaries), read beside
the index's parsing.

A v3 mirror has one small spec manifest per binary (a million at 1M specs), each read for
its tarball's size: a few system calls and little Python each, and at that size much of
it waiting on the disk. With many of them, a process of its own reads them while the
ingest parses the index (the other core; threads only handed the GIL over, see
docs/benchmarks/ingest-speed.md); with few, or where no process can be started, they are
read in this process when asked for. That process also reads the views' blobs
(view_binaries.py) once the manifests are read, sharing them with the build, which
reads them from the last once its parse is done (claims.py).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
from array import array
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

import orjson

from cachegql.index.ingest.claims import ViewClaims
from cachegql.index.ingest.file_stock import FileStock
from cachegql.index.ingest.files import TooLargeError, read_regular_status, reason
from cachegql.index.ingest.helper_process import (
    as_helper,
    start_helper,
    stop_helper,
    stops_held,
)
from cachegql.index.ingest.limits import SourceLimits
from cachegql.index.ingest.locations import Opener
from cachegql.index.ingest.manifest_listing import (
    MANIFEST_SUFFIX,
    holds_at_least,
    is_regular,
    listed_manifests,
)
from cachegql.index.ingest.size_packing import NAMES, by_node_hash, unpacked_sizes
from cachegql.index.ingest.spackdb import strip_clearsign
from cachegql.index.ingest.view_binaries import (
    PackedOutcome,
    ViewBlob,
    ViewOutcome,
    pack,
    unpack,
    view_outcome,
)
from cachegql.index.peak_memory import peak_rss_mb
from cachegql.index.records import MAX_SIZE, Problem

__all__ = [
    "PROCESS_FROM",
    "STOCK_KIND",
    "PendingSizes",
    "Sizes",
    "tarball_sizes",
]

TARBALL_MEDIA_TYPE = "application/vnd.spack.install."
# From this many manifests a process pays for its start (~0.4 s: a fresh interpreter).
PROCESS_FROM = 20_000
STOCK_KIND = "spec-manifests"  # what the manifests' `FileStock` is fed as

Sizes = tuple[dict[str, int], list[Problem]]
"""Tarball sizes by spec hash, and a problem per spec manifest without one."""
# What the reading process sends back: the hashes as one text, separated by "/" (which no
# file name holds), their sizes in a typed array, the problems (then, apart, its peak RSS
# in MB). A million sizes so packed are some 40 MB to hold and pickle, against 150 MB as
# a dict. Then the outcome of each view it took (the first ones: `ViewClaims`), and the
# manifests' `FileStock` digest.
_Packed = tuple[bytes, "array[int]", list[Problem], list[PackedOutcome], str | None]


class PendingSizes:
    """The sizes of a folder's spec manifests, being read; `result()` waits for them.

    When a process reads them, it also reads the `views` it is given, within `limits`,
    from the first, while the build may take them from the last (`read_views_here`). Once
    the sizes are in, `view_outcomes` holds the outcomes of the views the process read (the
    first ones; None when no process ran or it failed) and `views_read_here` those the
    build read, by position: the rest are the build's to read.
    """

    def __init__(
        self,
        specs: Path,
        process_from: int | None = None,
        views: Sequence[ViewBlob] = (),
        limits: SourceLimits | None = None,
    ) -> None:
        self._specs = specs
        self._views = list(views)
        self._limits = limits or SourceLimits()
        self._process: BaseProcess | None = None
        self._receiver: Connection | None = None
        self._claims: ViewClaims | None = None
        self.views_read_here: dict[int, ViewOutcome] = {}
        self.peak_rss_mb = 0
        """The reading process's own peak memory, once its sizes are in (0: none ran)."""
        self.view_outcomes: list[ViewOutcome] | None = None
        self.stock: str | None = None
        """The manifests' `FileStock` digest, by the status of each as it was read, once
        the sizes are in (None: one could not be looked at)."""
        if holds_at_least(specs, PROCESS_FROM if process_from is None else process_from):
            try:
                self._start()
            except BaseException:  # a stop held while it started: the reader goes with it
                self.cancel()
                raise

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        try:
            receiver, sender = context.Pipe(duplex=False)
        except OSError:  # no descriptor left: read them here
            return
        try:
            claims: ViewClaims | None = ViewClaims(context, len(self._views))
        except Exception:  # no shared memory here (a semaphore's): the reader reads every view
            claims = None
        # It lists the folder again rather than be sent a million paths (and hold them).
        args = (str(self._specs), sender, os.getpid(), self._views, self._limits, claims)
        with stops_held():
            process = start_helper(context, _send_sizes, args)
            sender.close()
            if process is None:  # read them here
                receiver.close()
                return
            self._process, self._receiver, self._claims = process, receiver, claims

    def read_views_here(self, read: Callable[[ViewBlob], ViewOutcome]) -> None:
        """Read with `read`, in this process, the views the reading process has not taken,
        from the last (into `views_read_here`); nothing when no process runs."""
        if self._claims is None or self._process is None:
            return
        alive = self._process.is_alive
        while (index := self._claims.last(alive)) is not None:
            self.views_read_here[index] = read(self._views[index])

    def result(self) -> Sizes:
        """The sizes by spec hash, and a problem per manifest without one."""
        if self._receiver is not None:
            try:
                packed: _Packed = pickle.loads(self._receiver.recv_bytes())
                hashes, sizes, problems, outcomes, self.stock = packed
                with contextlib.suppress(EOFError, OSError):  # the sizes are in all the same
                    self.peak_rss_mb = self._receiver.recv()
                self.view_outcomes = [unpack(outcome) for outcome in outcomes]
                if len(self.view_outcomes) + len(self.views_read_here) != len(self._views):
                    raise RuntimeError("views read by neither process, or by both")
                return unpacked_sizes(hashes, sizes), problems
            except (EOFError, OSError):  # the process ended without them: read them here
                pass
            finally:
                self.cancel()
        stock = FileStock(STOCK_KIND)
        found, problems = tarball_sizes(self._specs, stock)
        self.stock = stock.digest()
        return by_node_hash(found.keys(), found.values()), problems

    def view_outcomes_read(self, opener: Opener) -> list[ViewOutcome]:
        """Each view's outcome, in order, once the sizes are in: as this process read it
        while it waited, as the reading process sent it (its blob read there is noted in
        `opener`), else read now, through `opener`."""
        there = self.view_outcomes or []
        outcomes = []
        for index, view in enumerate(self._views):
            if index in self.views_read_here:
                outcome = self.views_read_here[index]
            elif index < len(there):
                outcome = there[index]
                if outcome.read_failed:
                    opener.read_elsewhere(view.blob, failure=outcome.problem)
                else:
                    opener.read_elsewhere(view.blob, sha256=view.checksum)
            else:
                outcome = view_outcome(view, opener)
            outcomes.append(outcome)
        return outcomes

    def cancel(self) -> None:
        """Stop reading (the build stops, or the sizes are in)."""
        stop_helper(self._process, self._receiver)
        self._process, self._receiver = None, None


def tarball_sizes(specs: Path, stock: FileStock | None = None) -> Sizes:
    """The sizes of a folder's spec manifests, read in this process (each fed to
    `stock` as it was read)."""
    unlisted: list[Problem] = []
    sizes, problems = _read_sizes(listed_manifests(specs, unlisted), stock)
    if unlisted and stock is not None:  # a folder not read: nothing stands for its files
        stock.unread()
    return sizes, unlisted + problems


def _read_sizes(
    manifests: Iterable[tuple[str, os.DirEntry[str]]], stock: FileStock | None = None
) -> Sizes:
    """Tarball sizes by spec hash (the last part of a manifest's name), and a problem for
    each manifest without one; each manifest fed to `stock` as it was read. `manifests`
    as `listed_manifests` gives them."""
    sizes: dict[str, int] = {}
    problems: list[Problem] = []
    for path, entry in manifests:
        size, status = _tarball_size(path, is_regular(entry))
        if stock is not None:
            stock.add_read(path, status)
        if isinstance(size, str):
            problems.append(Problem(path, size))
        else:
            sizes[_hash_of(path)] = size
    return sizes, problems


def _send_sizes(
    specs: str,
    sender: Connection,
    build: int,
    views: Sequence[ViewBlob] = (),
    limits: SourceLimits | None = None,
    claims: ViewClaims | None = None,
) -> None:
    """In the reading process: the sizes, packed, and the outcomes of the views it takes
    (by `claims`, from the first; all of them without), then its peak memory. Ctrl-C is
    the build's to handle (it ends this process); if the build (`build`, its pid) is gone,
    killed, stop."""
    as_helper()

    def build_alive() -> bool:
        return os.getppid() == build

    hashes, sizes = bytearray(), array("q")
    unlisted: list[Problem] = []
    problems: list[Problem] = []
    stock = FileStock(STOCK_KIND)
    listed = listed_manifests(specs, unlisted, read_ahead_bytes=MANIFEST_MAX_BYTES)
    for count, (path, entry) in enumerate(listed):
        if count % _CHECK_EVERY == 0 and not build_alive():
            return
        size, status = _tarball_size(path, is_regular(entry))
        stock.add_read(path, status)
        if isinstance(size, str):
            problems.append(Problem(path, size))
        else:
            hashes += _hash_of(path).encode(NAMES, "surrogateescape") + b"/"
            sizes.append(size)
    if unlisted:  # a folder not read: nothing stands for its files
        stock.unread()
    opener = Opener(limits=limits)
    outcomes = []
    taken = (
        iter(range(len(views))) if claims is None else iter(lambda: claims.first(build_alive), None)
    )
    for index in taken:
        if not build_alive():
            return
        outcomes.append(pack(view_outcome(views[index], opener)))
    if not build_alive():  # a claim gave up: the build is gone
        return
    packed: _Packed = (bytes(hashes[:-1]), sizes, unlisted + problems, outcomes, stock.digest())
    payload = pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        sender.send_bytes(payload)
        sender.send(peak_rss_mb())  # after the pickling, the largest it grows
    except OSError:  # the build stopped listening
        return
    finally:
        sender.close()


_NO_SIZE = "spec manifest without a tarball size; ignored"
# Spack's spec manifests are a few hundred bytes (a clearsigned one a few KB): a larger
# file is not one, and is not read (a sparse file of 100 GB would be, whole).
MANIFEST_MAX_BYTES = 1 << 20
_CHECK_EVERY = 1024  # manifests read between two looks at whether the build is still there


def _hash_of(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(MANIFEST_SUFFIX).rsplit("-", 1)[-1]


def _tarball_size(
    path: str, listed_regular: bool = False
) -> tuple[int | str, os.stat_result | None]:
    """The tarball size a manifest gives (else the problem, in words), and the status of
    the file as it was read (None: it could not be)."""
    try:
        data, status = read_regular_status(
            path, listed_regular=listed_regular, limit=MANIFEST_MAX_BYTES
        )
    except TooLargeError as exc:
        return f"spec manifest not read: {reason(exc)}; ignored", None
    except OSError as exc:
        return f"spec manifest cannot be read ({reason(exc)}); ignored", None
    try:
        document = orjson.loads(strip_clearsign(data))
        records = document.get("data") if isinstance(document, dict) else None
        size = next(
            r.get("contentLength")
            for r in (records if isinstance(records, list) else ())
            if isinstance(r, dict) and str(r.get("mediaType", "")).startswith(TARBALL_MEDIA_TYPE)
        )
    except (ValueError, StopIteration):  # not JSON, no tarball record
        return _NO_SIZE, status
    if type(size) is not int or size < 0:  # not a bool, nor a negative size
        return _NO_SIZE, status
    if size > MAX_SIZE:
        return (
            f"spec manifest gives a tarball size of {size} bytes, more than a file can be; ignored",
            status,
        )
    return size, status
