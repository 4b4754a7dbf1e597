"""An opener that remembers what the ingest read, for the fingerprints of what it read.

A tag read anyway is read through a `RecordingOpener`, which keeps the digest of every
body (and every failure) as the ingest read it, and the `Stock` of each local mirror taken
before: its fingerprint (identity.py) is then found from what was read, reading nothing
twice and nothing after.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from cachegql.index.ingest.digest_memo import FileStatuses, Recorded
from cachegql.index.ingest.files import (
    Blob,
    PendingSha256,
    map_regular_status,
    read_regular_status,
    sha256_regular_status,
)
from cachegql.index.ingest.listed_indexes import MANIFEST
from cachegql.index.ingest.locations import (
    Location,
    NotFoundError,
    Opener,
    PendingCheck,
    ReadError,
)

__all__ = ["RecordingOpener", "Stock"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Stock:
    """What stands for the files of a local mirror that the ingest reads without its
    opener (by listing folders and reading files directly): its views' names, and the
    `FileStock` (names and statuses) of its spec manifests and (in a v2 mirror
    without an index) of its spec files. Taken before the ingest, so that a file
    rewritten during it makes the next build read the tag again, never gives a
    fingerprint of new content over old data; but for the spec manifests of a tag being
    read (`spec_manifests` None): their reader gives their stock, by the status of each
    as it opened it, before reading it (tarball_sizes.py), and none is looked at twice."""

    views: tuple[str, ...]
    spec_manifests: str | None
    v2_folder: Path
    spec_files: str | None  # None: it has an index.json


class RecordingOpener(Opener):
    """An opener that remembers the sha256 of each body it read, each location it
    found missing and each read that failed, for the identities of what it read
    (`tag_fingerprint`).

    With `known` (the local files an earlier build hashed, by status: digest_memo.py), a
    local file asked for its digest but not read is not read if its status is the one
    recorded. `recorded()` gives the same for the next build: the status each local file
    read or known had, where it stood still while it was read.
    """

    def __init__(self, opener: Opener, known: Mapping[str, Recorded] | None = None) -> None:
        super().__init__(opener.reader, opener.limits)
        self.digests: dict[str, str | PendingSha256 | None] = {}
        # The local files' statuses, and which locations a fingerprint asked for: only
        # those are recorded for the next build.
        self.statuses = FileStatuses(known)
        self.asked: set[str] = set()
        # Reads that failed otherwise than by a missing location (a 503, a timeout, a
        # checksum mismatch, a blob a manifest names but is missing): a tag with any of
        # them is not what its sources hold, so it gets no fingerprint.
        self.failures: dict[str, str] = {}
        # What of local mirrors is known by listing and `stat` (`take_stock`), and whether
        # reading is over: a frozen opener reads nothing more, so that a fingerprint is
        # only ever of what the ingest read.
        self.stock: dict[str, Stock | None] = {}
        # The spec manifests' stock as their reader found them (`stocked`), by folder.
        self.file_stocks: dict[str, str | None] = {}
        # What takes a local mirror's `Stock` for a fingerprint: `identity.look`, unless a
        # helper takes them ahead (look_ahead.py).
        self.look: Callable[[Location], Stock | None] | None = None
        self.frozen = False
        self._manifests: dict[str, bytes] = {}

    def read(self, location: Location) -> bytes:
        # A fingerprint is of what the ingest read: a v3 index manifest (which names the
        # blob whose digest it asks for) as the ingest read it, and nothing else.
        if self.frozen:
            kept = self._manifests.get(location.text)
            if kept is None:
                raise ReadError(f"{location}: not read by the ingest")
            return kept
        base_read = super().read
        data = self._recording(location, lambda: base_read(location))
        # A large body (an index.json without its .hash) is hashed beside its parse.
        pending = PendingSha256(data)
        self.digests[location.text] = pending.result() if pending.done else pending
        if location.name == MANIFEST:
            self._manifests[location.text] = data
        return data

    def _recording(self, location: Location, read: Callable[[], _T]) -> _T:
        """`read()` of `location`, a local file's status kept if it stood still, and a
        missing location or a failure kept for the fingerprint."""
        try:
            with self._reading(location):
                return read()
        except NotFoundError:
            self.digests[location.text] = None
            raise
        except ReadError as exc:
            self.failures[location.text] = str(exc)
            raise

    def read_verifying(self, location: Location, sha256: str) -> tuple[Blob, PendingCheck]:
        # `read_verified` too: it waits for this check.
        try:
            with self._reading(location):
                data, check = super().read_verifying(location, sha256)
        except ReadError as exc:  # a missing blob too: its manifest names it
            self.failures[location.text] = str(exc)
            raise
        return data, _RecordedCheck(check.location, check.sha256, check.hashing, self)

    def _reading(self, location: Location) -> AbstractContextManager[None]:
        if location.is_url:
            return nullcontext()
        return self.statuses.reading(location.text, str(location.path))

    def _read_file(self, path: Path) -> bytes:
        data, status = read_regular_status(path)
        self.statuses.opened(status)
        return data

    def _map_file(self, path: Path) -> Blob:
        # A listed blob, verified against its name: known by its status next time.
        data, status = map_regular_status(path)
        self.statuses.opened(status)
        return data

    def recorded(self) -> dict[str, Recorded]:
        """The local files whose digests a fingerprint asked for, each with the status
        that stands for the bytes of its digest (digest_memo.py), where one does."""
        found = {}
        for text in self.asked:
            status, digest = self.statuses.settled.get(text), self.digests.get(text)
            if status is None or digest is None or text in self.failures:
                continue
            if isinstance(digest, PendingSha256):
                digest = self.digests[text] = digest.result()
            found[text] = (status, digest)
        return found

    def known_digests(self) -> dict[str, str]:
        """The sha256 of each body this opener knows (read, or known by its status)."""
        return {text: found for text in self.digests if (found := self.body_digest(text))}

    def body_digest(self, text: str) -> str | None:
        """The sha256 of the body last read at the location `text` (or known by its status)."""
        digest = self.digests.get(text)
        if digest is None or text in self.failures:
            return None
        if isinstance(digest, PendingSha256):
            digest = self.digests[text] = digest.result()
        return digest

    def read_elsewhere(
        self, location: Location, sha256: str | None = None, failure: str | None = None
    ) -> None:
        self.statuses.forget(location.text)
        if failure is not None:
            self.failures[location.text] = failure
        elif sha256 is not None:
            self.digests[location.text] = sha256.lower()

    def stocked(self, folder: Location, stock: str | None) -> None:
        """Kept for the fingerprint: the files of `folder` as the ingest read them (a
        mirror listed twice in a tag is read twice: two stocks that differ stand for
        nothing)."""
        known = self.file_stocks.get(folder.text, stock)
        self.file_stocks[folder.text] = stock if known == stock else None

    def _hash_file(self, location: Location) -> None:
        """A local file's digest, for a fingerprint only: hashed as it is read, never held
        whole (a 1.8 GB index blob whose status moved)."""
        hashing = functools.partial(self._local, location, self._hash_path)
        self.digests[location.text] = self._recording(location, hashing)

    def _hash_path(self, path: Path) -> str:
        digest, status = sha256_regular_status(path)
        self.statuses.opened(status)
        return digest

    def digest(self, location: Location) -> str:
        """The sha256 of the body at `location`, as read already if it was; ReadError
        again, without a second request, if reading it failed."""
        self.asked.add(location.text)
        if location.text in self.failures:
            raise ReadError(self.failures[location.text])
        if location.text not in self.digests:
            if self.frozen:
                raise ReadError(f"{location}: not read by the ingest")
            local = not location.is_url
            known = self.statuses.take(location.text, str(location.path)) if local else None
            if known is not None:
                self.digests[location.text] = known
            elif local:
                self._hash_file(location)
            else:
                self.read(location)
        digest = self.digests[location.text]
        if digest is None:
            raise NotFoundError(f"{location}: not found")
        if isinstance(digest, PendingSha256):
            digest = self.digests[location.text] = digest.result()
        return digest


@dataclass(frozen=True)
class _RecordedCheck(PendingCheck):
    """A check whose outcome its `RecordingOpener` keeps: the digest, or the failure."""

    opener: RecordingOpener

    def wait(self) -> None:
        try:
            super().wait()
        except ReadError as exc:
            self.opener.failures[self.location.text] = str(exc)
            raise
        self.opener.digests[self.location.text] = self.sha256.lower()
