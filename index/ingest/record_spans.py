"""Where each install record of an index lies in its bytes, found without parsing it.

An index's records are `"<dag hash>": {"spec": ..., "in_buildcache": bool}` in a row.
Two scans find them. `quick_spans` looks for the literal `"spec"` key, which the regex
engine finds with a fast search for its text (a pattern that starts at every quote, as a
DAG hash key does, is tried at each of them: 2.7 times slower on a 363 MB index), and
takes the hash key just before it. It holds only if the records tile the installs with
one `in_buildcache` flag each, and raises `SlicingError` otherwise (a record whose first
key is not its spec, a record without a flag or with two), so that the caller scans
again with `exact_spans`, which finds every DAG hash key wherever it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

from cachegql.index.ingest.files import Blob, release

__all__ = [
    "RECORD",
    "EscapeError",
    "SlicingError",
    "Span",
    "compact_binaries",
    "compact_spans",
    "end_of_value",
    "exact_spans",
    "last_record",
    "quick_spans",
]

# Where an install record starts: `"<dag hash>": {`. Nothing else in an index is an
# object keyed by a DAG hash (a record that does not parse is the index's problem).
RECORD = re.compile(rb'"([a-z2-7]{32})"\s*:\s*\{')
_IN_BUILDCACHE = rb'"in_buildcache"\s*:\s*(true|false)'
_FLAG = re.compile(_IN_BUILDCACHE)
# A record's start or its flag (group 2), found in one scan of a view's index.
_RECORD_OR_FLAG = re.compile(RECORD.pattern + b"|" + _IN_BUILDCACHE)
_SPEC_KEY = re.compile(rb'"spec"\s*:')
_COMPACT_KEY = 36  # bytes of `"<hash>":{`, the key right before `"spec"` in compact JSON
_KEY_WINDOW = 256  # how far before `"spec"` its record's key may start, spaces and all

# A record: the match of its key (group 1 the hash; it ends just after the record's
# `{`), where its bytes end, and its first `in_buildcache` flag (ending in true or false).
Span = tuple[re.Match[bytes], int, re.Match[bytes] | None]


class SlicingError(Exception):
    """The records are not laid out as `quick_spans` needs: scan again exactly."""


class EscapeError(SlicingError):
    """A record holds a `\\u` escape, which may spell a key: neither the compact scan nor
    the quick one reads it, so the exact one is next."""


def quick_spans(data: Blob, begin: int, last: re.Match[bytes], last_end: int) -> Iterator[Span]:
    """Each record from `begin` to `last_end` (`last` the last record's key, found from
    the file's tail), found from its `"spec"` key, with its flag.

    Raises `SlicingError` unless the records tile the installs exactly: the first starts
    at `begin`, every `"spec"` key is a record's first key, the last is `last`, and each
    record holds exactly one flag; and unless no `\\u` escape is there, as a key spelled
    with escapes (`"\\u0073pec"`) would not be seen. Then no record can hide inside
    another's bytes: it would bring a `"spec"` key or a flag of its own (one with neither
    is no binary either way, and its record's bytes do not parse).
    """
    flags = _FLAG.finditer(data, begin, last_end)
    specs = _SPEC_KEY.finditer(data, begin, last_end)
    starts = (_record_key(data, begin, spec.start()) for spec in specs)
    flag, current = next(flags, None), next(starts, None)
    if current is None or data[begin : current.start()].strip():
        raise SlicingError("the first record does not start the installs")
    if flag is not None and flag.start() < current.start():
        raise SlicingError("an in_buildcache flag outside any record")
    while current is not None:
        following = next(starts, None)
        end = last_end if following is None else following.start()
        if flag is None or flag.start() >= end:
            raise SlicingError(f"record {current.group(1).decode()} has no in_buildcache flag")
        after = next(flags, None)
        if after is not None and after.start() < end:
            raise SlicingError(f"record {current.group(1).decode()} has two in_buildcache flags")
        if following is None and current.start() != last.start():
            raise SlicingError("the records end before the last record")
        if _has_escapes(data, current.start(), end):
            raise EscapeError(f"record {current.group(1).decode()} holds \\u escapes")
        yield current, end, flag
        current, flag = following, after


_SPEC = b'"spec"'
_FLAG_VALUES = (b":true", b":false")
_FLAG_KEY = b'"in_buildcache"'
_COMPACT_RECORD = re.compile(rb'"([a-z2-7]{32})":\{')
_RELEASE_SPAN = 64 << 20  # bytes of a mapped index scanned before its pages are dropped


def compact_binaries(
    data: Blob, begin: int, last: re.Match[bytes], last_end: int
) -> list[bytes] | None:
    """The keys of the records between `begin` and `last_end` that are binaries, when the
    records are laid out as `quick_spans` needs and compact (`"<hash>":{"spec":`, and
    `"in_buildcache":true` or `false`, as Spack writes them); None when they are not,
    for the caller to scan them with `quick_spans`.

    The rules of `compact_spans`, and no backslash at all (the flags are read here, not
    parsed). A view's index is read only for this (`binary_hashes`): 1.8 -> 1.4 s for
    the 200k mirror's 652 MB of views.
    """
    binaries: list[bytes] = []
    released = begin
    try:
        for key, _, flag in _compact_records(data, begin, last, last_end, _has_backslash):
            if data[flag + 15 : flag + 20] == b":true":
                binaries.append(key.group(1))
            if key.start() - released > _RELEASE_SPAN:
                released = key.start()
                release(data, released)
    except SlicingError:
        return None
    return binaries


def compact_spans(data: Blob, begin: int, last: re.Match[bytes], last_end: int) -> Iterator[Span]:
    """`quick_spans` for compact records (`"<hash>":{"spec":`, as Spack writes them), found
    with `bytes.find` instead of the regex engine (a 1.8 KB record: 7.5 -> 5.6 µs).

    What it reads, `quick_spans` reads alike, and it refuses more (raising SlicingError):
    see `_compact_records`. An index laid out otherwise (a space after a key) fails at its
    first record or where it is met, and the caller scans again with `quick_spans`. The
    flag is not given (None): a full read parses it with its record.
    """
    for key, end, _ in _compact_records(data, begin, last, last_end, _has_escapes):
        yield key, end, None


def _compact_records(
    data: Blob,
    begin: int,
    last: re.Match[bytes],
    last_end: int,
    refused: Callable[[Blob, int, int], bool],
) -> Iterator[tuple[re.Match[bytes], int, int]]:
    """Each compact record's key, end and where its flag is, found with `bytes.find` (2.8
    GB/s against the regex engine's 1.3), while these hold (else SlicingError): the first
    record starts at `begin` and the last is `last`; every `"spec"` text is a record's
    first key, followed by its colon and right after its compact key; each record holds
    exactly one `"in_buildcache"` text, followed by `:true` or `:false`; `refused` finds
    nothing in it (EscapeError)."""
    spec = data.find(_SPEC, begin, last_end)
    start = spec - _COMPACT_KEY
    if spec < 0 or start < begin or data[begin:start].strip():
        raise SlicingError("the first record is not compact")
    flag = data.find(_FLAG_KEY, begin, last_end)
    while True:
        key = _COMPACT_RECORD.match(data, start, spec)
        following = data.find(_SPEC, spec + 6, last_end)
        end = last_end if following < 0 else following - _COMPACT_KEY
        if key is None or key.end() != spec or data[spec + 6 : spec + 7] != b":":
            raise SlicingError("a spec key that is not its compact record's first key")
        if not start <= flag < end or not data[flag + 15 : flag + 21].startswith(_FLAG_VALUES):
            raise SlicingError(f"record {key.group(1).decode()} has no compact in_buildcache flag")
        after = data.find(_FLAG_KEY, flag + 15, last_end)
        if 0 <= after < end:
            raise SlicingError(f"record {key.group(1).decode()} has two in_buildcache flags")
        if refused(data, start, end):
            raise EscapeError(f"record {key.group(1).decode()} holds escapes")
        if following < 0:
            if start != last.start():
                raise SlicingError("the records end before the last record")
            yield key, end, flag
            return
        yield key, end, flag
        spec, flag, start = following, after, end


def _has_backslash(data: Blob, start: int, end: int) -> bool:
    return data.find(b"\\", start, end) >= 0


def _has_escapes(data: Blob, start: int, end: int) -> bool:
    """Whether `\\u` is in these bytes (a key may be spelled with escapes). Looked for a
    record at a time, as the scan goes (a mapped index is released behind it), and a
    backslash first: one byte is found at memory speed, two take 20 times as long."""
    return data.find(b"\\", start, end) >= 0 and data.find(b"\\u", start, end) >= 0


def _record_key(data: Blob, begin: int, spec: int) -> re.Match[bytes]:
    key = _key_before(data, begin, spec)
    if key is None:
        raise SlicingError("a spec key that is not its record's first key")
    return key


def _key_before(data: Blob, begin: int, spec: int) -> re.Match[bytes] | None:
    """The record key `"<hash>": {` that ends, but for spaces, where `"spec"` starts;
    None for a `"spec"` that is not a record's first key."""
    compact = spec - _COMPACT_KEY
    if compact >= begin:
        key = RECORD.match(data, compact, spec)
        if key is not None and key.end() == spec:
            return key
    brace = data.rfind(b"{", max(begin, spec - _KEY_WINDOW), spec)
    if brace < 0 or data[brace + 1 : spec].strip():
        return None
    quote = data.rfind(b'"', max(begin, brace - _KEY_WINDOW), brace)
    if quote - 33 < begin:
        return None
    key = RECORD.match(data, quote - 33, brace + 1)
    return key if key is not None and key.end() == brace + 1 else None


def exact_spans(data: Blob, begin: int, last_end: int, lazy: bool) -> Iterator[Span]:
    """Each record's start, where it ends (the next start, or `last_end`) and, with
    `lazy`, its `in_buildcache` flag: one scan for both, as neither can overlap the other.
    The flag is None when a record has none or more than one (a node may hold that key
    too), so that the caller parses it."""
    current: re.Match[bytes] | None = None
    flag: re.Match[bytes] | None = None
    flags = 0
    for found in (_RECORD_OR_FLAG if lazy else RECORD).finditer(data, begin):
        if found.group(1) is None:  # a flag
            if current is not None and found.end() <= last_end:
                flag, flags = found, flags + 1
            continue
        if current is not None:
            yield current, found.start(), flag if flags == 1 else None
        current, flag, flags = found, None, 0
    if current is not None:
        yield current, last_end, flag if flags == 1 else None


def last_record(data: Blob, start: int, span: int) -> re.Match[bytes] | None:
    """The last record start at or after `start`, searched in ever longer tails from
    `span` bytes (two record starts cannot overlap, so a tail's last is the whole file's)."""
    size = span
    while True:
        begin = max(start, len(data) - size)
        last = None
        for last in RECORD.finditer(data, begin):  # noqa: B007 (the last is wanted)
            pass
        if last is not None or begin == start:
            return last
        size *= 4


def end_of_value(data: Blob, start: int) -> int:
    """Where the JSON object starting at `start` ends, or -1."""
    text = data[start:].decode("utf-8", "replace")
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return -1
    return start + len(text[:end].encode("utf-8", "replace"))
