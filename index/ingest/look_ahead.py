"""Local mirrors looked at for a rebuild's fingerprints by a helper process, ahead of need.

A rebuild knows a tag unchanged by its fingerprint, which looks at every spec manifest
of the tag's local mirrors (`identity.look`: their names and statuses): a tag of ten v3
mirrors of 50,000 binaries is 103,506 `stat`s, 0.7 s, on one core while the other
idles. `LookAhead` is given the looks the rebuild will ask for, in the order it asks
(each compared tag's local mirrors, tag by tag). Where they are many (`AHEAD_FROM` spec
manifests, guessed from the first mirror), a helper process takes them one after
another, and the build, when it asks for one, takes it itself unless the helper has
(`EachClaims`); waiting for one the helper is taking, it takes the next ones no one has.
A tag's looks then take about half the time, and while the build reads a changed tag,
the helper looks at the next tags' mirrors. A tag known changed by its index fingerprint
(index/tag_checks.py) is read before the others, and if it has several caches, its looks
come first: while it is read, the build asks for them one mirror at a time and waits for
the helper's (`share` False) rather than take the next looks, which its read would then
wait for.

A look is the one the build would take (the same function on the same folders), taken
before its tag's ingest (a changed tag's: before the sizes it stands for are taken from
their part), but not always at its tag's turn: from the build's start on. A
spec manifest written after its look, before its tag's turn, is seen by the next build
(the tag is reused now, or read with the sizes its manifests had at the look, as one
written during the ingest always was), never lost. Where no helper can be started, or
it ends early, the build takes the rest itself.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from cachegql.index.ingest.buildcache import V3_SPECS
from cachegql.index.ingest.claims import EachClaims
from cachegql.index.ingest.helper_process import (
    as_helper,
    helper_context,
    start_helper,
    stop_helper,
    stops_held,
)
from cachegql.index.ingest.identity import look
from cachegql.index.ingest.locations import Location
from cachegql.index.ingest.manifest_listing import holds_at_least
from cachegql.index.ingest.recording import Stock

__all__ = ["AHEAD_FROM", "LookAhead"]

# Spec manifests to look at (guessed: the first mirror's, times the looks) from which a
# helper pays for its start (forked, a few ms; spawned, a fresh interpreter: 0.3 to 0.8 s
# of imports, on the other core) and its messages: 100,000 take about 0.7 s.
AHEAD_FROM = 100_000


class LookAhead:
    """The `Stock` of each local mirror a rebuild compares, by tag and root, taken in
    this process or by a helper; `close()` stops the helper."""

    def __init__(
        self,
        looks: Sequence[tuple[str, Location]],
        ahead_from: int | None = None,
        fork: bool = True,
    ) -> None:
        # A root listed twice in a tag is looked at once for it (`_stock_of`).
        self._places = {
            key: n for n, key in enumerate(dict.fromkeys((t, r.text) for t, r in looks))
        }
        self._roots = [root for _, root in self._places]
        self._ahead_from = AHEAD_FROM if ahead_from is None else ahead_from
        self._fork = fork  # where it can be (`helper_context`); else spawned
        self._done: dict[int, Stock | None] = {}  # taken, here or by the helper
        self._process: BaseProcess | None = None
        self._receiver: Connection | None = None
        self._claims: EachClaims | None = None
        self.helped = 0
        """How many looks the helper gave."""

    def start(self) -> None:
        """Start the helper, when there are looks to share, they hold `ahead_from` spec
        manifests or more (as guessed from the first), and a second core to take them
        (else the build takes every look itself)."""
        if len(self._roots) < 2 or self._process is not None:
            return
        first = Location(self._roots[0]).join(*V3_SPECS).path
        if len(os.sched_getaffinity(0)) < 2 or not holds_at_least(
            first, -(-self._ahead_from // len(self._roots))
        ):
            return
        # Forked where it can be: at work at once, where a spawned one imports for 0.3 to
        # 0.6 s while the build looks alone (most of the first tag's looks).
        context = helper_context(self._fork)
        try:
            claims = EachClaims(context, len(self._roots))
            receiver, sender = context.Pipe(duplex=False)
        except Exception:  # no semaphore or descriptor here: the build looks alone
            return
        with stops_held(tracker=context.get_start_method() == "spawn"):
            process = start_helper(context, _look_ahead, (self._roots, claims, sender, os.getpid()))
            sender.close()
            if process is None:
                receiver.close()
                return
            self._process, self._receiver, self._claims = process, receiver, claims

    def for_tag(self, tag: str) -> Callable[[Location], Stock | None]:
        """What a `RecordingOpener` of `tag` takes its looks with."""
        return lambda root: self.look(tag, root)

    def look(self, tag: str, root: Location, *, share: bool = True) -> Stock | None:
        """`identity.look(root)` for `tag`, taken here or by the helper. Waiting for the
        helper, this process takes the next looks unless not `share` (a build reading a
        tag: the read is what the build waits for, not the looks)."""
        index = self._places.get((tag, root.text))
        if index is None:  # not foreseen: taken here, as it would be without a helper
            return look(root)
        if index not in self._done:
            if self._take(index):
                self._done[index] = look(root)
            else:
                self._wait_for(index, share)
        return self._done[index]

    def _take(self, index: int) -> bool:
        """Whether look `index` is this process's to take (False: the helper took it).
        A helper gone while it held the claims' lock leaves them all to the build."""
        if self._claims is None:
            return True
        taken = self._claims.take(index, self._helper_alive)
        if taken is None:
            self._claims = None
            return True
        return taken

    def _helper_alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def _wait_for(self, index: int, share: bool) -> None:
        """Look `index`, which the helper took, into `_done`: until it is in, the next
        looks no one took are taken here if `share` (rather than wait: both cores look)."""
        assert self._receiver is not None
        following = index + 1
        while index not in self._done:
            if share and not self._receiver.poll():
                following = self._next_free(following)
                if following < len(self._roots):
                    self._done[following] = look(Location(self._roots[following]))
                    following += 1
                    continue
            try:  # the helper's next look (the one waited for, or one before it)
                got, stock = pickle.loads(self._receiver.recv_bytes())
            except (EOFError, OSError):  # the helper ended before it gave it
                self._done[index] = look(Location(self._roots[index]))
                return
            self._done[got] = stock
            self.helped += 1

    def _next_free(self, start: int) -> int:
        """The first look from `start` not taken, now taken here (past the end: none)."""
        for index in range(start, len(self._roots)):
            if index not in self._done and self._take(index):
                return index
        return len(self._roots)

    def close(self) -> None:
        """Stop the helper (the build is over, or stops)."""
        stop_helper(self._process, self._receiver)
        self._process, self._receiver, self._claims = None, None, None


def _look_ahead(roots: list[str], claims: EachClaims, sender: Connection, build: int) -> None:
    """In the helper: each look not taken yet, taken and sent in order; it stops once
    the build (`build`, its pid) is gone."""
    as_helper(sender)

    def build_alive() -> bool:
        return os.getppid() == build

    for index, root in enumerate(roots):
        taken = claims.take(index, build_alive)
        if taken is None or not build_alive():
            return
        if taken:
            message = pickle.dumps((index, look(Location(root))), pickle.HIGHEST_PROTOCOL)
            try:
                sender.send_bytes(message)
            except OSError:  # the build stopped listening
                return
