"""Relay-style pagination over an ordered result: opaque cursors bound to their query."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from cachegql.index import shorten
from cachegql.schema.errors import UserInputError

__all__ = ["DEFAULT_FIRST", "DEFAULT_MAX_FIRST", "Fingerprint", "Window", "fingerprint", "window"]

# A connection's page size when `first` is left out, and the cap on `first`.
DEFAULT_FIRST = 20
DEFAULT_MAX_FIRST = 100


class Fingerprint:
    """A short digest naming one query (index build, tag, field, arguments), made the first
    time a cursor needs it: most pages are read without cursors. Its parts are immutable."""

    __slots__ = ("_digest", "_parts")

    def __init__(self, parts: tuple[object, ...]) -> None:
        self._parts = parts
        self._digest: str | None = None

    def __str__(self) -> str:
        if self._digest is None:
            self._digest = hashlib.blake2b(repr(self._parts).encode(), digest_size=6).hexdigest()
        return self._digest

    def __repr__(self) -> str:  # a part of another fingerprint (a tag diff's pages)
        return repr(str(self))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fingerprint) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def fingerprint(*parts: object) -> Fingerprint:
    """The name of the query of these parts, for its cursors (`Fingerprint`)."""
    return Fingerprint(parts)


def encode_cursor(query: Fingerprint, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{query}:{offset}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str, query: Fingerprint) -> int:
    """The offset a cursor points at; it must come from the same query and index build."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        owner, _, offset_text = text.partition(":")
        offset = int(offset_text)
    except (ValueError, UnicodeDecodeError):
        offset = -1
    if offset < 0:  # no cursor the API returns holds a negative offset
        raise UserInputError(
            f"malformed cursor {shorten(cursor)}: pass a cursor exactly as the API returned it"
        )
    if owner != str(query):
        raise UserInputError(
            "this cursor belongs to another query, other arguments or an older index; "
            "start again without 'after'"
        )
    return offset


@dataclass(frozen=True, slots=True)
class Window:
    """The slice [start, stop) of a result of `total` items that a page shows."""

    query: Fingerprint
    start: int
    stop: int
    total: int

    @property
    def has_next(self) -> bool:
        return self.stop < self.total

    @property
    def has_previous(self) -> bool:
        return self.start > 0

    def cursor(self, offset: int) -> str:
        return encode_cursor(self.query, offset)


def window(
    query: Fingerprint, total: int, first: int | None, after: str | None, max_first: int
) -> Window:
    """Validate `first`/`after` and pick the page; `first` above the cap is capped."""
    if first is None:
        first = max_first
    if first < 0:
        raise UserInputError(f"'first' must be 0 or more, got {first}")
    start = 0 if after is None else decode_cursor(after, query) + 1
    start = min(start, total)
    return Window(query, start, min(total, start + min(first, max_first)), total)
